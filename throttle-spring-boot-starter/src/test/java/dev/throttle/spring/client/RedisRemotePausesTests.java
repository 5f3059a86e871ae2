package dev.throttle.spring.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.testing.redis.RedisMonitor;
import dev.throttle.testing.redis.SharedRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.web.client.RestClient;

/**
 * Two instances of an application on one real Redis, calling one real local HTTP server through a
 * client that honours remote limits: after the first 429 that instance A receives, instance B does
 * not call the server until the pause ends (Redis's clock ends it for both), and then does. The pause
 * is one key with a time to live; reading it is one {@code PTTL} per call of such a client.
 */
class RedisRemotePausesTests {

    private CountingServer server;

    private RedisClient redisClient;

    private RedisCommands<String, String> redis;

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class Instance {}

    @BeforeEach
    void start() throws Exception {
        SharedRedis.flush();
        this.server = new CountingServer();
        this.redisClient = SharedRedis.endpoint().newClient();
        this.redis = this.redisClient.connect().sync();
    }

    @AfterEach
    void stop() {
        this.server.close();
        this.redisClient.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }

    private ConfigurableApplicationContext instance(String... more) {
        return new SpringApplicationBuilder(Instance.class)
                .properties(
                        "spring.main.web-application-type=none",
                        "spring.main.banner-mode=off",
                        "spring.data.redis.url=" + SharedRedis.endpoint().url(),
                        "throttle.store.type=redis",
                        "throttle.policies.upstream.algorithm=gcra",
                        "throttle.policies.upstream.limit=100",
                        "throttle.policies.upstream.period=1s",
                        "throttle.clients.quotes.base-url=" + this.server.url(),
                        "throttle.clients.quotes.policy=upstream",
                        "throttle.clients.quotes.honor-remote-limits=true")
                .properties(more)
                .run();
    }

    private static RestClient client(ConfigurableApplicationContext instance) {
        return instance.getBean(RestClient.Builder.class).build();
    }

    private int call(RestClient client) {
        return client.get()
                .uri(this.server.url() + "/quote")
                .exchange((request, response) -> response.getStatusCode().value());
    }

    @Test
    void afterTheFirst429ThatOneInstanceReceivesNoInstanceCallsTheServerUntilThePauseEnds() {
        try (ConfigurableApplicationContext a = instance();
                ConfigurableApplicationContext b = instance()) {
            RestClient onA = client(a);
            RestClient onB = client(b);
            assertThat(call(onB)).isEqualTo(200);
            this.server.thenAnswer(429, Map.of("Retry-After", "2"));
            assertThat(call(onA)).isEqualTo(429);
            long pausedAt = System.nanoTime();
            String pauseKey = "throttle:{pause:quotes:" + this.server.url().substring("http://".length()) + "}";
            assertThat(this.redis.pttl(pauseKey))
                    .as("one key, ended by Redis's clock")
                    .isBetween(1L, 2_000L);
            int refusedOnB = 0;
            while (true) {
                try {
                    assertThat(call(onB)).isEqualTo(200);
                    break;
                } catch (OutgoingCallThrottledException ex) {
                    assertThat(ex.isRemotePause()).isTrue();
                    refusedOnB++;
                    assertThat(this.server.calls())
                            .as("nothing reached the server during the pause")
                            .isEqualTo(2);
                    sleep(50);
                }
            }
            assertThat(System.nanoTime() - pausedAt)
                    .as("B's first call after the 429 was sent once the pause had ended")
                    .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(1_900));
            assertThat(refusedOnB).isGreaterThan(5);
            assertThat(this.server.calls()).isEqualTo(3);
        }
    }

    @Test
    void anInstanceWhoseWaitOutlastsThePauseWaitsForItsEndThenCalls() {
        try (ConfigurableApplicationContext a = instance();
                ConfigurableApplicationContext b = instance("throttle.clients.quotes.wait=5s")) {
            this.server.thenAnswer(503, Map.of("Retry-After", "1"));
            assertThat(call(client(a))).isEqualTo(503);
            long start = System.nanoTime();
            assertThat(call(client(b))).isEqualTo(200);
            assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(800));
            assertThat(this.server.calls()).isEqualTo(2);
        }
    }

    @Test
    void aCallOfAClientThatHonoursRemoteLimitsReadsThePauseWithOnePttl() throws Exception {
        try (ConfigurableApplicationContext a = instance()) {
            RestClient onA = client(a);
            call(onA);
            try (RedisMonitor monitor = new RedisMonitor(SharedRedis.endpoint())) {
                this.redis.echo("start");
                monitor.awaitMarker("start");
                monitor.clear();
                call(onA);
                this.redis.echo("end");
                monitor.awaitMarker("end");
                List<String> commands = monitor.commands().stream()
                        .filter(RedisMonitor.Command::isTopLevel)
                        .map(RedisMonitor.Command::name)
                        .toList();
                assertThat(commands).containsExactly("PTTL", "EVALSHA", "ECHO");
            }
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(ex);
        }
    }
}
