package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.Limiter;
import dev.throttle.LockoutPolicy;
import dev.throttle.Policy;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.testing.redis.RedisClusterProcesses;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/**
 * The Redis store on a real three-master Redis Cluster, connected the way Spring Boot connects from
 * {@code spring.data.redis.cluster.nodes}: right decisions for keys in every slot range, and no
 * {@code CROSSSLOT} or {@code MOVED} error reaches the caller.
 */
class RedisClusterStoreTests {

    private static final List<Policy> POLICIES = List.of(
            TokenBucketPolicy.of("tb", 3, Duration.ofHours(1)),
            new GcraPolicy("gcra", 3, Duration.ofHours(1)),
            new FixedWindowPolicy("fw", 3, Duration.ofHours(1)),
            new SlidingLogPolicy("log", 3, Duration.ofHours(1), Duration.ofHours(1), 1),
            LockoutPolicy.of("lock", List.of(Duration.ofHours(1))));

    private final ApplicationContextRunner contextRunner =
            new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class));

    @Test
    void decidesRightForKeysInEverySlotRange() {
        RedisClusterProcesses cluster = RedisClusterProcesses.shared();
        cluster.flushAll();
        this.contextRunner
                .withPropertyValues("spring.data.redis.cluster.nodes=" + cluster.nodesProperty())
                .run((context) -> {
                    assertThat(context).hasSingleBean(RedisConnectionFactory.class);
                    ReactiveRedisConnectionFactory factory = context.getBean(ReactiveRedisConnectionFactory.class);
                    // the first calls also discover the topology and connect to each node: a loaded CI host took over 2
                    // s
                    RedisThrottleStore store = new RedisThrottleStore(factory, "throttle", Duration.ofSeconds(10));
                    for (Policy policy : POLICIES) {
                        Limiter limiter = store.limiter(policy);
                        for (int range = 0; range < RedisClusterProcesses.SLOT_RANGES.length; range++) {
                            for (String key : keysInRange(store, policy.name(), range, 4)) {
                                assertExactQuota(limiter, policy, key);
                            }
                        }
                    }
                    assertThat(keyCount(cluster))
                            .as("every key written, on whichever node owns it")
                            .isEqualTo(POLICIES.size() * 3 * 4);
                });
    }

    private static void assertExactQuota(Limiter limiter, Policy policy, String key) throws Exception {
        int quota = policy.quota();
        for (int i = 0; i < quota; i++) {
            assertThat(limiter.tryAcquire(key, 1).allowed())
                    .as(policy.name() + " " + key + " pass " + i)
                    .isTrue();
        }
        Decision refused = limiter.tryAcquireAsync(key, 1).toCompletableFuture().get();
        assertThat(refused.allowed())
                .as(policy.name() + " " + key + " over quota")
                .isFalse();
        assertThat(limiter.peek(key).allowed()).isFalse();
        limiter.refund(key, 1);
        assertThat(limiter.peek(key).allowed())
                .as(policy.name() + " " + key + " after refund")
                .isTrue();
        limiter.reset(key);
        assertThat(limiter.peek(key)).isEqualTo(limiter.peek("never-used"));
        assertThat(limiter.tryAcquire(key, 1).allowed()).isTrue();
    }

    /** Keys whose Redis key hashes into the slot range of master {@code range}. */
    private static List<String> keysInRange(RedisThrottleStore store, String policy, int range, int count) {
        int[] slots = RedisClusterProcesses.SLOT_RANGES[range];
        List<String> keys = new ArrayList<>();
        for (int i = 0; keys.size() < count; i++) {
            String key = "user-" + i + "@example.com";
            int slot = SlotHash.getSlot(store.redisKey(policy, key));
            if (slot >= slots[0] && slot <= slots[1]) {
                keys.add(key);
            }
        }
        return keys;
    }

    private static long keyCount(RedisClusterProcesses cluster) {
        RedisClusterClient client = cluster.newClient();
        try (StatefulRedisClusterConnection<String, String> connection = client.connect()) {
            return connection.sync().dbsize();
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
    }
}
