package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.DecisionSource;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Limiter;
import dev.throttle.SourcedDecision;
import dev.throttle.SourcedLimiter;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.testing.redis.RedisClusterProcesses;
import dev.throttle.testing.redis.RedisProcess;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * {@code durability: replicated} on a real Redis Cluster of three masters, each with a replica: a
 * decision is on its own master's replica when it is answered (the {@code WAIT} goes to the key's
 * master, not to a node Lettuce picks), and when a master dies, what the failure mode allows for its
 * keys is kept and counts on its promoted replica once that has a replica of its own again, while the
 * other masters' keys decide on Redis throughout.
 */
@Tag("redis-topology")
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class RedisClusterDurabilityTests {

    private static final FixedWindowPolicy LOGIN = new FixedWindowPolicy("login", 100_000, Duration.ofHours(1));

    private static final Duration TIMEOUT = Duration.ofMillis(800);

    /** Who decided a call that Redis decided (the failure mode {@code local} is the local store). */
    private static final DecisionSource ON_REDIS = DecisionSource.store("redis");

    private final List<AutoCloseable> resources = new ArrayList<>();

    @AfterEach
    void stopEverything() throws Exception {
        for (int i = this.resources.size() - 1; i >= 0; i--) {
            try {
                this.resources.get(i).close();
            } catch (Exception ex) {
                // a node already gone
            }
        }
    }

    @Test
    void aReplicatedDecisionIsOnItsOwnMastersReplicaWhenItIsAnswered() throws Exception {
        RedisClusterProcesses cluster = RedisClusterProcesses.startWithReplicas(Duration.ofSeconds(2), false);
        this.resources.add(cluster);
        Setup setup = setup(cluster);
        for (int range = 0; range < RedisClusterProcesses.SLOT_RANGES.length; range++) {
            for (int i = 0; i < 5; i++) {
                String key = keyOn(setup.redis, range, "user-" + i);
                SourcedDecision decision = setup.limiter.tryAcquireSourced(key, 1);
                assertThat(decision.decision().allowed()).isTrue();
                assertThat(decision.source()).as("decided on Redis").isEqualTo(ON_REDIS);
                assertThat(existsOnReplica(cluster.replicas().get(range), setup.redis.redisKey("login", key)))
                        .as("%s on the replica of master %d when its decision was answered", key, range)
                        .isTrue();
            }
        }
        assertThat(setup.store.isStoreDown()).isFalse();
    }

    @Test
    void whatTheFailureModeAllowsForADeadMastersKeysCountsOnItsPromotedReplicaOnceThatHasAReplica() throws Exception {
        RedisClusterProcesses cluster = RedisClusterProcesses.startWithReplicas(Duration.ofSeconds(2), false);
        this.resources.add(cluster);
        Setup setup = setup(cluster);
        String deadKey = keyOn(setup.redis, 0, "mallory");
        String liveKey = keyOn(setup.redis, 1, "alice");
        int allowedDead = 0;
        for (int i = 0; i < 5; i++) {
            assertThat(setup.limiter.tryAcquireSourced(deadKey, 1).source()).isEqualTo(ON_REDIS);
            allowedDead++;
        }

        RedisProcess deadMaster = cluster.nodes().get(0);
        deadMaster.stop();
        int liveCalls = 0;
        int liveFromFailureMode = 0;
        long promotedBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        boolean restarted = false;
        while (true) {
            assertThat(System.nanoTime())
                    .as("the dead master's keys back on Redis")
                    .isLessThan(promotedBy);
            SourcedDecision dead = setup.limiter.tryAcquireSourced(deadKey, 1);
            if (dead.decision().allowed()) {
                allowedDead++;
            }
            SourcedDecision live = setup.limiter.tryAcquireSourced(liveKey, 1);
            liveCalls++;
            liveFromFailureMode += ON_REDIS.equals(live.source()) ? 0 : 1;
            if (ON_REDIS.equals(dead.source()) && restarted) {
                break;
            }
            if (!restarted && isMaster(cluster.replicas().get(0))) {
                // the promoted replica has no replica of its own: its keys stay with the failure mode
                // until the old master, started again, follows it
                Thread.sleep(1_000);
                assertThat(setup.limiter.tryAcquireSourced(deadKey, 1).source())
                        .as("no replica confirms the promoted master's writes yet")
                        .isNotEqualTo(ON_REDIS);
                allowedDead++;
                deadMaster.start();
                restarted = true;
            }
            Thread.sleep(20);
        }
        // the call that found Redis again was counted there too
        allowedDead--;
        int counted = LOGIN.quota() - setup.store.limiter(LOGIN).peek(deadKey).remaining();
        assertThat(counted)
                .as("%d calls allowed for the dead master's key, by Redis or the failure mode", allowedDead)
                .isGreaterThanOrEqualTo(allowedDead + 1);
        assertThat(liveFromFailureMode)
                .as("the live master's key, of %d calls, answered by the failure mode", liveCalls)
                .isLessThanOrEqualTo(3);
    }

    private Setup setup(RedisClusterProcesses cluster) throws InterruptedException {
        LettuceConnectionFactory factory = cluster.newConnectionFactory();
        this.resources.add(factory::destroy);
        RedisThrottleStore redis = new RedisThrottleStore(
                factory, "throttle", TIMEOUT, null, NearCacheSettings.disabled(), true, Set.of("login"));
        this.resources.add(redis::close);
        ResilientThrottleStore store = new ResilientThrottleStore(
                redis, FailureMode.LOCAL, new MemoryThrottleStore(TimeSource.system(), 10_000));
        SourcedLimiter limiter = (SourcedLimiter) store.limiter(LOGIN);
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (limiter.partition(keyOn(redis, 0, "warm")) == Limiter.ONE_PARTITION || store.isStoreDown()) {
            assertThat(System.nanoTime()).as("the topology read").isLessThan(end);
            limiter.tryAcquire(keyOn(redis, 0, "warm"), 1);
            Thread.sleep(10);
        }
        return new Setup(redis, store, limiter);
    }

    private static boolean existsOnReplica(RedisProcess replica, String redisKey) {
        RedisClient client = replica.endpoint().newClient();
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            // a Cluster replica answers reads of its master's slots once the connection says READONLY
            connection.sync().readOnly();
            return connection.sync().exists(redisKey) == 1;
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
    }

    private static boolean isMaster(RedisProcess node) {
        return node.info("replication").contains("role:master");
    }

    /** A key whose Redis key hashes into the slot range of master {@code range}. */
    private static String keyOn(RedisThrottleStore redis, int range, String name) {
        int[] slots = RedisClusterProcesses.SLOT_RANGES[range];
        for (int i = 0; ; i++) {
            String key = name + "-" + i;
            int slot = SlotHash.getSlot(redis.redisKey(LOGIN.name(), key));
            if (slot >= slots[0] && slot <= slots[1]) {
                return key;
            }
        }
    }

    private record Setup(RedisThrottleStore redis, ResilientThrottleStore store, SourcedLimiter limiter) {}
}
