package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.throttle.testing.redis.RedisProcess;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * A Redis that may evict keys forgets lockouts and counts: the store says so once when it connects,
 * naming the setting and what to do, and says once that it could not check where {@code CONFIG} is
 * refused. Each test runs its own Redis, since the setting is server-wide.
 */
@ExtendWith(OutputCaptureExtension.class)
class RedisMemoryPolicyTests {

    private RedisProcess redis;

    private LettuceConnectionFactory factory;

    private RedisThrottleStore store;

    @AfterEach
    void stop() {
        if (this.store != null) {
            this.store.close();
        }
        if (this.factory != null) {
            this.factory.destroy();
        }
        if (this.redis != null) {
            this.redis.close();
        }
    }

    @Test
    void aRedisThatEvictsAnyKeyIsAWarningWithAnAction(CapturedOutput output) {
        connect("--maxmemory-policy", "allkeys-lru");
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(output).contains("maxmemory-policy is allkeys-lru"));
        assertThat(output).contains("WARN").contains("Action:").contains("noeviction");
    }

    @Test
    void aRedisThatEvictsKeysWithATtlIsAWarningTooSinceEveryThrottleKeyHasOne(CapturedOutput output) {
        connect("--maxmemory-policy", "volatile-ttl");
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(output).contains("maxmemory-policy is volatile-ttl"));
    }

    @Test
    void aRedisThatNeverEvictsIsNoWarning(CapturedOutput output) throws Exception {
        connect("--maxmemory-policy", "noeviction");
        this.store.warmUpDone().get(10, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(output).doesNotContain("maxmemory-policy");
    }

    @Test
    void aRedisThatRefusesConfigIsSaidOnceToBeUnchecked(CapturedOutput output) {
        connect("--rename-command", "CONFIG", "\"\"");
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(output).contains("Could not read Redis's maxmemory-policy"));
        assertThat(output).doesNotContain("WARN");
    }

    @Test
    void aCheckSaysEachFindingOnceHoweverOftenItRuns(CapturedOutput output) {
        connect("--maxmemory-policy", "allkeys-random");
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(output).contains("maxmemory-policy is allkeys-random"));
        MemoryPolicyCheck check = new MemoryPolicyCheck();
        org.springframework.data.redis.connection.ReactiveRedisConnection connection =
                this.factory.getReactiveConnection();
        try {
            check.check(connection, Duration.ofSeconds(2));
            check.check(connection, Duration.ofSeconds(2));
        } finally {
            connection.close();
        }
        assertThat(output.toString().split("maxmemory-policy is allkeys-random", -1))
                .hasSize(3);
    }

    @Test
    void aClusterAnswersPerNodeAndAnyEvictingNodeIsTheFinding() {
        Properties config = new Properties();
        config.setProperty("127.0.0.1:7000.maxmemory-policy", "noeviction");
        config.setProperty("127.0.0.1:7001.maxmemory-policy", "allkeys-lfu");
        assertThat(MemoryPolicyCheck.finding(config)).isEqualTo("allkeys-lfu");
        config.setProperty("127.0.0.1:7001.maxmemory-policy", "noeviction");
        assertThat(MemoryPolicyCheck.finding(config)).isEqualTo("noeviction");
        assertThat(MemoryPolicyCheck.finding(new Properties())).isNull();
    }

    private void connect(String... args) {
        this.redis = new RedisProcess(RedisProcess.freePort(false), List.of(args));
        this.redis.start();
        RedisClient client = this.redis.endpoint().newClient();
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            assertThat(connection.sync().ping()).isEqualTo("PONG");
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
        this.factory = this.redis.endpoint().newConnectionFactory();
        this.store = new RedisThrottleStore(this.factory, "throttle", Duration.ofSeconds(2));
    }
}
