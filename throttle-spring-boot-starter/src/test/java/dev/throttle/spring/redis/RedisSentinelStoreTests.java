package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.Limiter;
import dev.throttle.LockoutPolicy;
import dev.throttle.Policy;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.testing.redis.RedisProcess;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;

/**
 * The Redis store behind a real Redis Sentinel, connected the way Spring Boot connects from
 * {@code spring.data.redis.sentinel.*}: the store needs nothing Sentinel-specific.
 */
class RedisSentinelStoreTests {

    private static final List<Policy> POLICIES = List.of(
            TokenBucketPolicy.of("tb", 3, Duration.ofHours(1)),
            new GcraPolicy("gcra", 3, Duration.ofHours(1)),
            new FixedWindowPolicy("fw", 3, Duration.ofHours(1)),
            new SlidingLogPolicy("log", 3, Duration.ofHours(1), Duration.ofHours(1), 1),
            LockoutPolicy.of("lock", List.of(Duration.ofHours(1))));

    @Test
    void decidesThroughSentinel() throws Exception {
        try (RedisProcess master = RedisProcess.startStandalone();
                RedisProcess sentinel = RedisProcess.startSentinel("throttle-master", master)) {
            awaitMaster(sentinel);
            new ApplicationContextRunner()
                    .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class))
                    .withPropertyValues(
                            "spring.data.redis.sentinel.master=throttle-master",
                            "spring.data.redis.sentinel.nodes=127.0.0.1:" + sentinel.port())
                    .run((context) -> {
                        ReactiveRedisConnectionFactory factory = context.getBean(ReactiveRedisConnectionFactory.class);
                        // the first calls also discover the topology and connect to each node: a loaded CI host took
                        // over 2 s
                        RedisThrottleStore store = new RedisThrottleStore(factory, "throttle", Duration.ofSeconds(10));
                        for (Policy policy : POLICIES) {
                            Limiter limiter = store.limiter(policy);
                            for (int i = 0; i < policy.quota(); i++) {
                                assertThat(limiter.tryAcquire("alice", 1).allowed())
                                        .as(policy.name())
                                        .isTrue();
                            }
                            assertThat(limiter.tryAcquire("alice", 1).allowed())
                                    .as(policy.name())
                                    .isFalse();
                            limiter.reset("alice");
                            assertThat(limiter.peek("alice")).isEqualTo(limiter.peek("never-used"));
                            assertThat(limiter.tryAcquireAsync("bob", 1)
                                            .toCompletableFuture()
                                            .get()
                                            .allowed())
                                    .isTrue();
                        }
                    });
            assertThat(keysOnMaster(master))
                    .as("bob's key of every policy, on the master that Sentinel named")
                    .isEqualTo(POLICIES.size());
        }
    }

    private static long keysOnMaster(RedisProcess master) {
        RedisClient client = master.endpoint().newClient();
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            return connection.sync().dbsize();
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
    }

    private static void awaitMaster(RedisProcess sentinel) throws InterruptedException {
        RedisClient client = RedisClient.create(RedisURI.create("127.0.0.1", sentinel.port()));
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (connection
                    .sync()
                    .dispatch(
                            io.lettuce.core.protocol.CommandType.SENTINEL,
                            new io.lettuce.core.output.ArrayOutput<>(io.lettuce.core.codec.StringCodec.UTF8),
                            new io.lettuce.core.protocol.CommandArgs<>(io.lettuce.core.codec.StringCodec.UTF8)
                                    .add("get-master-addr-by-name")
                                    .add("throttle-master"))
                    .isEmpty()) {
                assertThat(System.nanoTime()).as("Sentinel knows the master").isLessThan(deadline);
                Thread.sleep(50);
            }
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
    }
}
