package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.ManualTimeSource;
import dev.throttle.MultiLimitPolicy;
import dev.throttle.Policy;
import dev.throttle.Throttler;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.testing.Eventually;
import dev.throttle.testing.redis.RedisClusterProcesses;
import dev.throttle.testing.redis.RedisProcess;
import io.lettuce.core.MigrateArgs;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.SlotHash;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * {@code TRYAGAIN}: what Redis Cluster answers a command of several keys in a slot being moved when
 * only some of its keys have moved. A decision never meets it: it names one key (a policy of several
 * limits keeps them all in that key's one value), which a moving slot answers by {@code ASK} at worst.
 * The one call of several keys on a Cluster is the save of a policy change (the changes' hash and
 * their counter, both under {@code {<key-prefix>}}): split by a migration, it fails at once, naming
 * {@code TRYAGAIN} (the actuator answers 503 with it, nothing changed), having stored and numbered
 * nothing, and succeeds again once the keys are on one node.
 */
@Tag("redis-topology")
class RedisClusterTryAgainTests {

    private static final Duration TIMEOUT = Duration.ofSeconds(3);

    /** 100 an hour and 1,000 a day, in one key. */
    private static final Policy SEARCH = MultiLimitPolicy.of(
            TokenBucketPolicy.of("search", 100, Duration.ofHours(1)),
            TokenBucketPolicy.of("search", 1_000, Duration.ofDays(1)));

    private static final Pattern REJECTED = Pattern.compile("rejected_calls=(\\d+)");

    private static final HttpClient HTTP = HttpClient.newHttpClient();

    /** An application on the Cluster, with the actuator's policy changes. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class Instance {}

    private ListAppender<ILoggingEvent> logs;

    @BeforeAll
    static void routeJavaLoggingToLogback() {
        // the failure policy lives in core and logs through System.Logger (java.util.logging here)
        if (!SLF4JBridgeHandler.isInstalled()) {
            SLF4JBridgeHandler.removeHandlersForRootLogger();
            SLF4JBridgeHandler.install();
        }
    }

    @BeforeEach
    void captureLogs() {
        this.logs = new ListAppender<>();
        this.logs.start();
        ((Logger) LoggerFactory.getLogger("dev.throttle")).addAppender(this.logs);
    }

    @AfterEach
    void stopCapturing() {
        ((Logger) LoggerFactory.getLogger("dev.throttle")).detachAppender(this.logs);
    }

    @Test
    void aMigrationThatSplitsASlotsKeysFailsAPolicyChangeAtOnceNamingTryAgainWhileDecisionsOfSeveralLimitsStayExact()
            throws Exception {
        try (RedisClusterProcesses cluster = RedisClusterProcesses.start()) {
            LettuceConnectionFactory factory = cluster.newConnectionFactory();
            ManualTimeSource clock = new ManualTimeSource();
            RedisThrottleStore redis = new RedisThrottleStore(factory, "throttle", TIMEOUT, clock);
            ResilientThrottleStore store =
                    new ResilientThrottleStore(redis, FailureMode.LOCAL, new MemoryThrottleStore(clock, 10_000), clock);
            RedisSharedPolicyChanges changes = new RedisSharedPolicyChanges(factory, "throttle");
            RedisClient client = RedisClient.create();
            String hash = "{throttle}:policy-changes";
            String counter = hash + ":version";
            int slot = SlotHash.getSlot(hash);
            RedisProcess from = owner(cluster, slot);
            RedisProcess to = cluster.nodes().get((cluster.nodes().indexOf(from) + 1) % 3);
            try (StatefulRedisConnection<String, String> onFrom =
                            client.connect(from.endpoint().uri());
                    StatefulRedisConnection<String, String> onTo =
                            client.connect(to.endpoint().uri())) {
                RedisCommands<String, String> source = onFrom.sync();
                RedisCommands<String, String> target = onTo.sync();
                Limiter limiter = store.limiter(SEARCH);
                // a key of the policy in the same slot as the fleet's keys: one migration moves them all
                String key = keyInSlot(redis, slot);
                String redisKey = redis.redisKey(SEARCH.name(), key);
                int allowed = 0;
                for (int i = 0; i < 5; i++) {
                    allowed += decided(limiter, key);
                }
                assertThat(changes.save("search", Map.of("limit", "50"), "ops").version())
                        .isOne();

                moving(source, target, slot);
                // the counter moved, the hash not yet: the slot's keys are split between the two nodes
                source.migrate("127.0.0.1", to.port(), 0, 5_000, MigrateArgs.Builder.keys(counter));

                long rejectedBefore = rejectedScriptCalls(cluster, client);
                long started = System.nanoTime();
                Throwable failure = catchThrowable(() -> changes.save("search", Map.of("limit", "60"), "ops"));
                Duration answeredIn = Duration.ofNanos(System.nanoTime() - started);
                assertThat(failure)
                        .as("the save of two keys split by the migration fails, naming Redis's own error")
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessage("Redis refused storing the change of policy 'search': "
                                + "TRYAGAIN Multiple keys request during rehashing of slot");
                assertThat(answeredIn)
                        .as("answered at once, not after the save's bound")
                        .isLessThan(RedisSharedPolicyChanges.BOUND.dividedBy(5));
                assertThat(rejectedScriptCalls(cluster, client) - rejectedBefore)
                        .as("sent once: the client does not retry TRYAGAIN")
                        .isOne();
                assertThat(source.hget(hash, "search"))
                        .as("nothing stored")
                        .startsWith("1\n")
                        .endsWith("limit=50\n");
                target.asking();
                assertThat(target.get(counter)).as("no number taken").isEqualTo("1");

                // a decision names one key, which the source still holds: it decides there
                allowed += decided(limiter, key);
                source.migrate("127.0.0.1", to.port(), 0, 5_000, MigrateArgs.Builder.keys(redisKey));
                // the key moved: ASK, and the target decides on the key's one state
                allowed += decided(limiter, key);

                // the hash follows the counter: both on the target, ASK takes the save there
                source.migrate("127.0.0.1", to.port(), 0, 5_000, MigrateArgs.Builder.keys(hash));
                assertThat(changes.save("search", Map.of("limit", "70"), "ops").version())
                        .as("numbered after the last stored change: the refused save took no number")
                        .isEqualTo(2);

                moved(cluster, client, slot, from, to);
                assertThat(changes.save("search", Map.of("limit", "80"), "ops").version())
                        .isEqualTo(3);
                assertThat(changes.loadAll()).singleElement().satisfies((change) -> {
                    assertThat(change.version()).isEqualTo(3);
                    assertThat(change.settings()).isEqualTo(Map.of("limit", "80"));
                });
                allowed += decided(limiter, key);

                assertThat(allowed).as("every decision allowed, by Redis").isEqualTo(8);
                Decision peek = limiter.peek(key);
                assertThat(peek.limit(0).remaining())
                        .as("every allowed call counted once, on the key's one state")
                        .isEqualTo(100 - allowed);
                assertThat(peek.limit(1).remaining()).isEqualTo(1_000 - allowed);
                assertThat(target.clusterCountKeysInSlot(slot))
                        .as("the key and the changes' two keys on the target")
                        .isEqualTo(3);
                assertThat(source.clusterCountKeysInSlot(slot)).isZero();
                assertThat(store.isStoreDown()).as("no outage").isFalse();
                assertThat(messages(Level.WARN)).as("nothing logged").isEmpty();
            } finally {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
                changes.close();
                redis.close();
                factory.destroy();
            }
        }
    }

    @Test
    void theActuatorAnswersAChangeSplitByAMigration503NamingTryAgainWithNothingChangedAndTakesItOnceTheSlotMoved()
            throws Exception {
        try (RedisClusterProcesses cluster = RedisClusterProcesses.start();
                ConfigurableApplicationContext app = new SpringApplicationBuilder(Instance.class)
                        .properties(
                                "server.port=0",
                                "spring.data.redis.cluster.nodes=" + cluster.nodesProperty(),
                                "throttle.store.type=redis",
                                "throttle.policies.api.algorithm=fixed-window",
                                "throttle.policies.api.limit=3",
                                "throttle.policies.api.window=60s",
                                "management.endpoints.web.exposure.include=throttle",
                                "management.endpoint.throttle.access=unrestricted",
                                "spring.main.banner-mode=off")
                        .run()) {
            Throttler throttler = app.getBean(Throttler.class);
            RedisClient client = RedisClient.create();
            String hash = "{throttle}:policy-changes";
            int slot = SlotHash.getSlot(hash);
            RedisProcess from = owner(cluster, slot);
            RedisProcess to = cluster.nodes().get((cluster.nodes().indexOf(from) + 1) % 3);
            try (StatefulRedisConnection<String, String> onFrom =
                            client.connect(from.endpoint().uri());
                    StatefulRedisConnection<String, String> onTo =
                            client.connect(to.endpoint().uri())) {
                assertThat(send(app, "POST", "/actuator/throttle/api", "{\"limit\": 5}")
                                .statusCode())
                        .isEqualTo(200);
                Eventually.until(
                        "the change applies", () -> throttler.policy("api").quota() == 5);

                moving(onFrom.sync(), onTo.sync(), slot);
                onFrom.sync().migrate("127.0.0.1", to.port(), 0, 5_000, MigrateArgs.Builder.keys(hash + ":version"));
                HttpResponse<String> split = send(app, "POST", "/actuator/throttle/api", "{\"limit\": 7}");
                assertThat(split.statusCode()).isEqualTo(503);
                assertThat(split.body())
                        .contains("The change of policy 'api' could not be stored (Redis refused storing the change "
                                + "of policy 'api': TRYAGAIN Multiple keys request during rehashing of slot); "
                                + "nothing changed. Retry once the store answers.");
                assertThat(throttler.policy("api").quota())
                        .as("nothing changed")
                        .isEqualTo(5);

                onFrom.sync().migrate("127.0.0.1", to.port(), 0, 5_000, MigrateArgs.Builder.keys(hash));
                moved(cluster, client, slot, from, to);
                assertThat(send(app, "POST", "/actuator/throttle/api", "{\"limit\": 7}")
                                .statusCode())
                        .as("the change sent again, once the slot moved")
                        .isEqualTo(200);
                Eventually.until(
                        "the change applies", () -> throttler.policy("api").quota() == 7);
            } finally {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
            }
        }
    }

    /** The slot starts moving from {@code source} to {@code target}: {@code IMPORTING}, then {@code MIGRATING}. */
    private static void moving(RedisCommands<String, String> source, RedisCommands<String, String> target, int slot) {
        target.clusterSetSlotImporting(slot, source.clusterMyId());
        source.clusterSetSlotMigrating(slot, target.clusterMyId());
    }

    /** The slot's owner changes as Redis's resharding does it: the target, the source, then the others. */
    private static void moved(
            RedisClusterProcesses cluster, RedisClient client, int slot, RedisProcess from, RedisProcess to) {
        try (StatefulRedisConnection<String, String> onTo =
                client.connect(to.endpoint().uri())) {
            String targetId = onTo.sync().clusterMyId();
            onTo.sync().clusterSetSlotNode(slot, targetId);
            List<RedisProcess> rest = new ArrayList<>(cluster.nodes());
            rest.remove(to);
            rest.remove(from);
            rest.add(0, from);
            for (RedisProcess node : rest) {
                try (StatefulRedisConnection<String, String> connection =
                        client.connect(node.endpoint().uri())) {
                    connection.sync().clusterSetSlotNode(slot, targetId);
                }
            }
        }
    }

    private static HttpResponse<String> send(
            ConfigurableApplicationContext app, String method, String path, String json) throws Exception {
        int port = Integer.parseInt(app.getEnvironment().getProperty("local.server.port"));
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json")
                .method(method, HttpRequest.BodyPublishers.ofString(json))
                .build();
        return HTTP.send(request, HttpResponse.BodyHandlers.ofString());
    }

    private static int decided(Limiter limiter, String key) {
        return limiter.tryAcquire(key, 1).allowed() ? 1 : 0;
    }

    /** Script calls that the Cluster's nodes refused (redirects and TRYAGAIN), from INFO commandstats. */
    private static long rejectedScriptCalls(RedisClusterProcesses cluster, RedisClient client) {
        long rejected = 0;
        for (RedisProcess node : cluster.nodes()) {
            try (StatefulRedisConnection<String, String> connection =
                    client.connect(node.endpoint().uri())) {
                for (String line : connection.sync().info("commandstats").split("\r?\n")) {
                    if (line.startsWith("cmdstat_evalsha:") || line.startsWith("cmdstat_eval:")) {
                        Matcher matcher = REJECTED.matcher(line);
                        if (matcher.find()) {
                            rejected += Long.parseLong(matcher.group(1));
                        }
                    }
                }
            }
        }
        return rejected;
    }

    private static RedisProcess owner(RedisClusterProcesses cluster, int slot) {
        for (int i = 0; i < RedisClusterProcesses.SLOT_RANGES.length; i++) {
            int[] range = RedisClusterProcesses.SLOT_RANGES[i];
            if (slot >= range[0] && slot <= range[1]) {
                return cluster.nodes().get(i);
            }
        }
        throw new IllegalStateException("No master holds slot " + slot);
    }

    /** A key of {@link #SEARCH} whose Redis key hashes into {@code slot}. */
    private static String keyInSlot(RedisThrottleStore store, int slot) {
        for (int i = 0; ; i++) {
            String key = "user-" + i;
            if (SlotHash.getSlot(store.redisKey(SEARCH.name(), key)) == slot) {
                return key;
            }
        }
    }

    private List<String> messages(Level level) {
        synchronized (this.logs.list) {
            return this.logs.list.stream()
                    .filter((event) -> event.getLevel() == level)
                    .map(ILoggingEvent::getFormattedMessage)
                    .toList();
        }
    }
}
