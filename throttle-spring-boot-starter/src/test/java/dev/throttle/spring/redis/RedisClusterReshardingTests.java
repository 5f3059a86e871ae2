package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Limiter;
import dev.throttle.testing.redis.RedisClusterProcesses;
import dev.throttle.testing.redis.RedisProcess;
import io.lettuce.core.MigrateArgs;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * A slot moved from one master to another while calls decide on its keys ({@code CLUSTER SETSLOT
 * IMPORTING / MIGRATING}, {@code MIGRATE}, {@code SETSLOT NODE}): the calls meet {@code ASK} while
 * the key is on its way and {@code MOVED} once the slot has moved, the client follows both, and
 * every call is decided once, on the key's one state: none fails, none is counted twice or lost.
 */
class RedisClusterReshardingTests {

    private static final Duration TIMEOUT = Duration.ofSeconds(5);

    @Test
    void aSlotMovedUnderLoadKeepsEveryDecisionOnTheKeysOneStateThroughAskAndMoved() throws Exception {
        FixedWindowPolicy policy = new FixedWindowPolicy("reshard", 100_000, Duration.ofHours(1));
        try (RedisClusterProcesses cluster = RedisClusterProcesses.start()) {
            LettuceConnectionFactory factory = cluster.newConnectionFactory();
            RedisThrottleStore store = new RedisThrottleStore(factory, "throttle", TIMEOUT);
            RedisClient client = RedisClient.create();
            RedisProcess from = cluster.nodes().get(0);
            RedisProcess to = cluster.nodes().get(1);
            try (StatefulRedisConnection<String, String> onFrom =
                            client.connect(from.endpoint().uri());
                    StatefulRedisConnection<String, String> onTo =
                            client.connect(to.endpoint().uri())) {
                Limiter limiter = store.limiter(policy);
                String key = keyOnFirstMaster(store, policy.name());
                String redisKey = store.redisKey(policy.name(), key);
                int slot = SlotHash.getSlot(redisKey);

                AtomicInteger allowed = new AtomicInteger();
                AtomicInteger refused = new AtomicInteger();
                AtomicLong slowest = new AtomicLong();
                AtomicReference<Throwable> failure = new AtomicReference<>();
                AtomicBoolean running = new AtomicBoolean(true);
                for (int i = 0; i < 20; i++) {
                    decide(limiter, key, allowed, refused, slowest);
                }
                List<Thread> callers = new ArrayList<>();
                for (int t = 0; t < 4; t++) {
                    Thread caller = new Thread(() -> {
                        while (running.get()) {
                            try {
                                decide(limiter, key, allowed, refused, slowest);
                            } catch (Throwable ex) {
                                failure.compareAndSet(null, ex);
                                return;
                            }
                        }
                    });
                    caller.start();
                    callers.add(caller);
                }

                RedisCommands<String, String> source = onFrom.sync();
                RedisCommands<String, String> target = onTo.sync();
                String sourceId = source.clusterMyId();
                String targetId = target.clusterMyId();
                target.clusterSetSlotImporting(slot, sourceId);
                source.clusterSetSlotMigrating(slot, targetId);
                Thread.sleep(200);
                // the key on its way: the source answers ASK for it, the client asks the target
                source.migrate("127.0.0.1", to.port(), 0, 5_000, MigrateArgs.Builder.keys(redisKey));
                Thread.sleep(300);
                // the owner changes as Redis's resharding does it: the target first, then the source, then
                // the others (set on the source first, the two would send a client back and forth with MOVED
                // until it gave up)
                target.clusterSetSlotNode(slot, targetId);
                source.clusterSetSlotNode(slot, targetId);
                for (RedisProcess node : cluster.nodes()) {
                    if (node != from && node != to) {
                        try (StatefulRedisConnection<String, String> connection =
                                client.connect(node.endpoint().uri())) {
                            connection.sync().clusterSetSlotNode(slot, targetId);
                        }
                    }
                }
                // the slot moved: the source answers MOVED, the client follows and learns the new owner
                Thread.sleep(500);
                running.set(false);
                for (Thread caller : callers) {
                    caller.join(10_000);
                }

                assertThat(failure.get()).as("no call failed").isNull();
                assertThat(refused.get())
                        .as("far below the limit: no call refused")
                        .isZero();
                assertThat(source.clusterCountKeysInSlot(slot))
                        .as("the key left the source")
                        .isZero();
                assertThat(target.clusterCountKeysInSlot(slot))
                        .as("the key is on the target")
                        .isOne();
                assertThat(limiter.peek(key).remaining())
                        .as("every allowed call counted once, on the key's one state")
                        .isEqualTo(policy.limit() - allowed.get());
                assertThat(Duration.ofNanos(slowest.get()))
                        .as("each call answered within the timeout")
                        .isLessThan(TIMEOUT);
                assertThat(allowed.get())
                        .as("calls kept deciding through the move")
                        .isGreaterThan(20);
            } finally {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
                store.close();
                factory.destroy();
            }
        }
    }

    private static void decide(
            Limiter limiter, String key, AtomicInteger allowed, AtomicInteger refused, AtomicLong slowest) {
        long started = System.nanoTime();
        Decision decision = limiter.tryAcquire(key, 1);
        slowest.accumulateAndGet(System.nanoTime() - started, Math::max);
        (decision.allowed() ? allowed : refused).incrementAndGet();
    }

    /** A key whose Redis key hashes into the first master's slots. */
    private static String keyOnFirstMaster(RedisThrottleStore store, String policy) {
        int[] slots = RedisClusterProcesses.SLOT_RANGES[0];
        for (int i = 0; ; i++) {
            String key = "tenant-" + i;
            int slot = SlotHash.getSlot(store.redisKey(policy, key));
            if (slot >= slots[0] && slot <= slots[1]) {
                return key;
            }
        }
    }
}
