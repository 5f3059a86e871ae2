package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import ch.qos.logback.classic.Level;
import dev.throttle.BoundPolicy;
import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.testing.Eventually;
import dev.throttle.testing.ThrottleLogs;
import dev.throttle.testing.redis.RedisProcess;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.StatusOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The error replies a running Redis sends when it cannot take a write: {@code READONLY} from a
 * master demoted to a replica, {@code MASTERDOWN} from a replica that lost its master, and
 * {@code LOADING} while a server loads its dataset. Each is an outage of its own: decisions answer by
 * the failure mode at once (an error reply is no timeout: nobody waits for {@code timeout}), one
 * WARN names Redis's own error, and Redis decides again as soon as it can write.
 */
@Tag("redis-topology")
class RedisErrorRepliesTests {

    private static final FixedWindowPolicy POLICY = new FixedWindowPolicy("api", 1_000_000, Duration.ofHours(1));

    /** The store's timeout: an answer by the failure mode comes far sooner. */
    private static final Duration TIMEOUT = Duration.ofSeconds(3);

    private final List<AutoCloseable> resources = new ArrayList<>();

    @RegisterExtension
    final ThrottleLogs logs = new ThrottleLogs();

    @AfterEach
    void stopEverything() throws Exception {
        for (int i = this.resources.size() - 1; i >= 0; i--) {
            this.resources.get(i).close();
        }
    }

    @Test
    void aDemotedMasterAnswersReadOnlyWhichIsOneOutageUntilItIsMasterAgain() {
        RedisProcess redis = start(List.of());
        RedisProcess other = start(List.of());
        RedisCommands<String, String> commands = commands(redis);
        ResilientThrottleStore store = store(redis);
        BoundPolicy api = warmedUp(store);

        commands.replicaof("127.0.0.1", other.port());
        assertEveryDecisionAnswersAtOnceByTheFailureMode(api, store);
        assertThat(this.logs.warnings())
                .singleElement()
                .satisfies((message) -> assertThat(message).contains("READONLY"));

        commands.replicaofNoOne();
        assertDecidesOnRedisAgain(api, store);
    }

    @Test
    void aReplicaThatLostItsMasterAnswersMasterDownWhichIsAnOutageNamedByIt() {
        RedisProcess master = start(List.of());
        RedisProcess replica =
                start(List.of("--replicaof", "127.0.0.1 " + master.port(), "--replica-serve-stale-data", "no"));
        RedisCommands<String, String> replicaCommands = commands(replica);
        Eventually.until(
                "the replica is in sync",
                () -> replicaCommands.info("replication").contains("master_link_status:up"));
        master.stop();
        Eventually.until(
                "the replica sees its master gone",
                () -> replicaCommands.info("replication").contains("master_link_status:down"));

        ResilientThrottleStore store = store(replica);
        BoundPolicy api = new Throttler(store, List.of(POLICY)).bound("api");
        assertEveryDecisionAnswersAtOnceByTheFailureMode(api, store);
        assertThat(this.logs.warnings())
                .singleElement()
                .satisfies((message) -> assertThat(message).contains("MASTERDOWN"));
    }

    @Test
    void aServerLoadingItsDatasetAnswersLoadingWhichIsAnOutageThatEndsWhenItHasLoaded() throws Exception {
        RedisProcess redis = start(List.of(
                "--enable-debug-command", "yes",
                "--key-load-delay", "50",
                "--loading-process-events-interval-bytes", "1024"));
        RedisCommands<String, String> commands = commands(redis);
        ResilientThrottleStore store = store(redis);
        BoundPolicy api = warmedUp(store);
        commands.eval("for i = 1, 40000 do redis.call('SET', 'ballast:' .. i, 'x') end", ScriptOutputType.STATUS);

        // DEBUG RELOAD saves and loads the dataset again on the server's own thread, answering other
        // clients LOADING meanwhile (40,000 keys at 50 µs each: about two seconds)
        RedisCommands<String, String> reloader = commands(redis);
        CompletableFuture<String> reload = CompletableFuture.supplyAsync(reloader::debugReload);
        Eventually.until("a decision meets the loading server", () -> {
            api.tryAcquire("user-0", 1);
            return store.isStoreDown() || reload.isDone();
        });
        assertThat(reload).as("the reload was still running").isNotDone();
        long started = System.nanoTime();
        Decision decision = api.tryAcquire("user-1", 1);
        assertThat(decision.allowed()).isTrue();
        assertThat(Duration.ofNanos(System.nanoTime() - started))
                .as("answered by the failure mode, not after the timeout")
                .isLessThan(TIMEOUT.dividedBy(3));
        assertThat(store.isStoreDown()).isTrue();

        assertThat(reload.get()).isEqualTo("OK");
        assertDecidesOnRedisAgain(api, store);
        assertThat(this.logs.warnings())
                .singleElement()
                .satisfies((message) -> assertThat(message).contains("LOADING"));
    }

    @Test
    void aPausedRedisCostsThreeCallsTheirTimeoutThenAnswersAtOnceUntilItAnswersAgain() {
        RedisProcess redis = start(List.of());
        RedisCommands<String, String> commands = commands(redis);
        // long enough that an answer "at once" is told from a timeout on a busy host
        Duration timeout = Duration.ofSeconds(1);
        ResilientThrottleStore store = store(redis, timeout);
        BoundPolicy api = warmedUp(store);
        this.logs.clear();

        // Redis keeps the connection but answers nobody: a partition, a stalled server
        commands.clientPause(8_000);
        List<Duration> waits = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            long started = System.nanoTime();
            assertThat(api.tryAcquire("user-" + (i % 4), 1).allowed()).isTrue();
            waits.add(Duration.ofNanos(System.nanoTime() - started));
        }
        assertThat(waits.subList(0, 3))
                .as("no outage at one slow answer: three calls in a row wait their timeout")
                .allSatisfy((wait) -> assertThat(wait).isGreaterThanOrEqualTo(timeout.minusMillis(50)));
        assertThat(waits.subList(3, 20))
                .as("then the failure mode answers at once")
                .allSatisfy((wait) -> assertThat(wait).isLessThan(timeout.dividedBy(2)));
        assertThat(store.isStoreDown()).isTrue();
        assertThat(this.logs.warnings())
                .singleElement()
                .satisfies((message) -> assertThat(message).contains("no answer within 1000ms"));

        assertDecidesOnRedisAgain(api, store);
    }

    @Test
    void aSleepingRedisCostsThreeCallsTheirTimeoutThenAnswersAtOnceAndCountsTheTimedOutCallsOnceWhenItWakes()
            throws Exception {
        RedisProcess redis = start(List.of("--enable-debug-command", "yes"));
        RedisCommands<String, String> commands = commands(redis);
        Duration timeout = Duration.ofSeconds(1);
        ResilientThrottleStore store = store(redis, timeout);
        BoundPolicy api = warmedUp(store);
        this.logs.clear();

        // connected before Redis sleeps: a connection made meanwhile waits for Redis too
        RedisAsyncCommands<String, String> sleeper =
                commands(redis).getStatefulConnection().async();
        RedisAsyncCommands<String, String> pinger =
                commands(redis).getStatefulConnection().async();

        // DEBUG SLEEP stops the server's one thread: unlike CLIENT PAUSE, nobody is answered, not even
        // PING; it answers its own caller when the server wakes, so it is sent without waiting for it
        RedisFuture<String> sleep = sleeper.dispatch(
                CommandType.DEBUG,
                new StatusOutput<>(StringCodec.UTF8),
                new CommandArgs<>(StringCodec.UTF8).add("SLEEP").add(7));
        Eventually.until("Redis sleeps", () -> !answersWithin(pinger.ping(), Duration.ofMillis(200)));

        List<Duration> waits = new ArrayList<>();
        while (!sleep.isDone()) {
            long started = System.nanoTime();
            assertThat(api.tryAcquire("asleep", 1).allowed()).isTrue();
            waits.add(Duration.ofNanos(System.nanoTime() - started));
            // a call every 50 ms while Redis sleeps, which meets the failure mode's probes failing too
            sleep.await(50, TimeUnit.MILLISECONDS);
        }
        assertThat(waits.subList(0, 3))
                .as("no outage at one slow answer: three calls in a row wait their timeout")
                .allSatisfy((wait) -> assertThat(wait).isGreaterThanOrEqualTo(timeout.minusMillis(50)));
        assertThat(waits.subList(3, waits.size()))
                .as("then the failure mode answers at once until Redis wakes")
                .hasSizeGreaterThan(20)
                .allSatisfy((wait) -> assertThat(wait).isLessThan(timeout.dividedBy(2)));
        assertThat(sleep.get()).isEqualTo("OK");

        assertDecidesOnRedisAgain(api, store);
        // the three calls that timed out were on the connection when Redis slept: Redis runs each of
        // them once when it wakes (cancelling a sent command only drops its answer, and nothing sends
        // it again), so the key counts them although the failure mode answered them; the calls the
        // failure mode answered at once never reached Redis
        Eventually.until(
                "Redis has run the calls that timed out",
                () -> "3".equals(count(commands.get("throttle:{api:asleep}"))));
        Decision onRedis = api.tryAcquire("asleep", 1);
        assertThat(onRedis.remaining()).isEqualTo(POLICY.limit() - 4);
        assertThat(count(commands.get("throttle:{api:asleep}"))).isEqualTo("4");
        assertThat(this.logs.warnings())
                .singleElement()
                .satisfies((message) -> assertThat(message).contains("no answer within 1000ms"));
        assertThat(this.logs.messages(Level.INFO))
                .filteredOn((message) -> message.contains("answers again"))
                .hasSize(1);
    }

    private static boolean answersWithin(RedisFuture<?> answer, Duration bound) {
        try {
            return answer.await(bound.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new AssertionError(ex);
        }
    }

    /** The count of a fixed window's state ("<count>:<window start>"), or null without one. */
    private static String count(String state) {
        return (state != null) ? state.substring(0, state.indexOf(':')) : null;
    }

    @Test
    void savingOrReadingThePolicyChangesOfAPausedRedisFailsInsteadOfHanging() {
        RedisProcess redis = start(List.of());
        RedisCommands<String, String> commands = commands(redis);
        LettuceConnectionFactory connectionFactory = redis.endpoint().newConnectionFactory();
        this.resources.add(connectionFactory::destroy);
        RedisSharedPolicyChanges changes = new RedisSharedPolicyChanges(connectionFactory, "throttle");
        this.resources.add(changes::close);
        changes.save("api", Map.of("limit", "5"), "ops");

        commands.clientPause(RedisSharedPolicyChanges.BOUND.multipliedBy(3).toMillis());
        assertThatIllegalStateException()
                .isThrownBy(() -> changes.save("api", Map.of("limit", "6"), "ops"))
                .withMessageContaining("Redis did not answer storing the change of policy 'api'");
        assertThatIllegalStateException()
                .isThrownBy(changes::loadAll)
                .withMessageContaining("Redis did not answer reading the fleet's policy changes");
    }

    private void assertEveryDecisionAnswersAtOnceByTheFailureMode(BoundPolicy api, ResilientThrottleStore store) {
        this.logs.clear();
        for (int i = 0; i < 50; i++) {
            long started = System.nanoTime();
            Decision decision = api.tryAcquire("user-" + (i % 4), 1);
            assertThat(decision.allowed()).as("call %d: %s", i, decision).isTrue();
            assertThat(Duration.ofNanos(System.nanoTime() - started))
                    .as("call %d answered by the failure mode, not after the timeout", i)
                    .isLessThan(TIMEOUT.dividedBy(3));
        }
        assertThat(store.isStoreDown()).isTrue();
    }

    private void assertDecidesOnRedisAgain(BoundPolicy api, ResilientThrottleStore store) {
        Eventually.until("Redis decides again", () -> {
            api.tryAcquire("user-0", 1);
            return !store.isStoreDown();
        });
        Eventually.until(
                "the end of the outage is logged",
                () -> this.logs.messages(Level.INFO).stream().anyMatch((message) -> message.contains("answers again")));
    }

    private BoundPolicy warmedUp(ResilientThrottleStore store) {
        BoundPolicy api = new Throttler(store, List.of(POLICY)).bound("api");
        Eventually.until("Redis decides", () -> api.tryAcquire("warm-up", 1).allowed() && !store.isStoreDown());
        return api;
    }

    private RedisProcess start(List<String> args) {
        RedisProcess redis = new RedisProcess(RedisProcess.freePort(false), args);
        redis.start();
        this.resources.add(redis::stop);
        return redis;
    }

    private RedisCommands<String, String> commands(RedisProcess redis) {
        RedisClient client = redis.endpoint().newClient();
        this.resources.add(() -> client.shutdown(Duration.ZERO, Duration.ofSeconds(1)));
        StatefulRedisConnection<String, String> connection = client.connect();
        return connection.sync();
    }

    private ResilientThrottleStore store(RedisProcess redis) {
        return store(redis, TIMEOUT);
    }

    private ResilientThrottleStore store(RedisProcess redis, Duration timeout) {
        LettuceConnectionFactory connectionFactory = redis.endpoint().newConnectionFactory();
        this.resources.add(connectionFactory::destroy);
        return new ResilientThrottleStore(
                new RedisThrottleStore(connectionFactory, "throttle", timeout),
                FailureMode.LOCAL,
                new MemoryThrottleStore(TimeSource.system(), 10_000));
    }
}
