package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Limiter;
import dev.throttle.SourcedDecision;
import dev.throttle.SourcedLimiter;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.testing.ThrottleLogs;
import dev.throttle.testing.redis.RedisClusterProcesses;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * A Redis Cluster of three masters with a replica each, started by the test, loses a master (its
 * process stopped): the store takes out that master's keys on their own, after a few calls of their
 * own that wait for the timeout, and answers them by the failure mode at once from then on; the
 * keys of the other masters keep deciding on Redis, exactly; and once Redis promotes the replica,
 * the dead master's keys are decided on Redis again, with no restart and without a topology refresh
 * configured in Lettuce. One WARN names the dead master; one INFO ends its outage.
 */
@Tag("redis-topology")
class RedisClusterFailoverTests {

    /** The store's timeout: what a call for a dead master waits until its outage starts. */
    private static final Duration TIMEOUT = Duration.ofMillis(500);

    /** How long a master may be silent before the others mark it failed and its replica takes over. */
    private static final Duration NODE_TIMEOUT = Duration.ofMillis(2000);

    private static final int LIMIT = 50;

    private static final FixedWindowPolicy POLICY = new FixedWindowPolicy("api", LIMIT, Duration.ofHours(1));

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
    void aDeadMasterTakesOutItsOwnKeysOnlyUntilItsReplicaIsPromoted() throws Exception {
        RedisClusterProcesses cluster = RedisClusterProcesses.startWithReplicas(NODE_TIMEOUT, false);
        this.resources.add(cluster);
        LettuceConnectionFactory factory = cluster.newConnectionFactory();
        this.resources.add(factory::destroy);
        RedisThrottleStore redis = new RedisThrottleStore(factory, "throttle", TIMEOUT);
        ResilientThrottleStore store = new ResilientThrottleStore(redis, FailureMode.CLOSED, null);
        this.resources.add(store);
        SourcedLimiter limiter = (SourcedLimiter) store.limiter(POLICY);
        String deadKey = keyOn(redis, 0, "dead");
        List<String> healthyKeys = List.of(keyOn(redis, 1, "healthy"), keyOn(redis, 2, "healthy"));
        int deadPort = cluster.nodes().get(0).port();

        awaitTopology(limiter, redis);
        assertThat(limiter.partition(deadKey).toString())
                .as("the key's partition is its master")
                .startsWith("node 127.0.0.1:" + deadPort + " (");
        assertThat(limiter.partition(healthyKeys.get(0))).isNotEqualTo(limiter.partition(deadKey));
        assertThat(limiter.tryAcquireSourced(deadKey, 1).source().isFailureMode())
                .isFalse();

        AtomicLong promotedAt = watchPromotion(cluster.replicas().get(0).port());
        long killedAt = System.nanoTime();
        cluster.nodes().get(0).stop();

        List<Call> deadCalls = new ArrayList<>();
        int[] admitted = new int[healthyKeys.size()];
        int healthyCalls = 0;
        int healthyFromFailureMode = 0;
        long recoveredAt = 0;
        int callsSinceRecovery = 0;
        long deadline = killedAt + TimeUnit.SECONDS.toNanos(60);
        while (recoveredAt == 0 || callsSinceRecovery < 20 || healthyCalls < LIMIT + 20) {
            assertThat(System.nanoTime())
                    .as("the dead master's keys back on Redis")
                    .isLessThan(deadline);
            long start = System.nanoTime();
            SourcedDecision dead = limiter.tryAcquireSourced(deadKey, 1);
            long took = System.nanoTime() - start;
            deadCalls.add(new Call(start, took, dead.source().isFailureMode()));
            if (!dead.source().isFailureMode() && promotedAt.get() != 0) {
                if (recoveredAt == 0) {
                    recoveredAt = start;
                }
                callsSinceRecovery++;
            }
            for (int i = 0; i < healthyKeys.size(); i++) {
                SourcedDecision healthy = limiter.tryAcquireSourced(healthyKeys.get(i), 1);
                if (healthy.source().isFailureMode()) {
                    healthyFromFailureMode++;
                }
                if (healthy.decision().allowed()) {
                    admitted[i]++;
                }
            }
            healthyCalls++;
            Thread.sleep(10);
        }

        long recovered = recoveredAt;
        List<Call> answeredInstead = deadCalls.stream()
                .filter((call) -> call.start() < recovered && call.failureMode())
                .toList();
        List<Call> waited = answeredInstead.stream()
                .filter((call) -> call.tookNanos() >= TIMEOUT.toNanos() * 9 / 10)
                .toList();
        List<Call> atOnce = answeredInstead.subList(waited.size(), answeredInstead.size());
        long[] atOnceNanos = atOnce.stream().mapToLong(Call::tookNanos).sorted().toArray();
        long median = atOnceNanos[atOnceNanos.length / 2];
        long p90 = atOnceNanos[atOnceNanos.length * 9 / 10];
        long slowestAtOnce = atOnceNanos[atOnceNanos.length - 1];
        System.out.printf(
                "cluster failover: %d calls waited for the timeout; then %d answered by the failure mode in %.2f ms "
                        + "(median), %.2f ms (90th percentile), %.2f ms (slowest); replica promoted %d ms after the "
                        + "kill; dead master's keys on Redis %d ms after the promotion%n",
                waited.size(),
                atOnce.size(),
                median / 1e6,
                p90 / 1e6,
                slowestAtOnce / 1e6,
                TimeUnit.NANOSECONDS.toMillis(promotedAt.get() - killedAt),
                TimeUnit.NANOSECONDS.toMillis(recoveredAt - promotedAt.get()));

        assertThat(waited.size())
                .as("only the first calls of the dead master's keys wait for the timeout")
                .isLessThanOrEqualTo(3);
        assertThat(answeredInstead.subList(0, waited.size()))
                .as("the calls that waited are the first ones")
                .isEqualTo(waited);
        assertThat(atOnce)
                .as("the dead master's keys answered at once for a while")
                .hasSizeGreaterThan(10);
        assertThat(p90).as("then answered within a few milliseconds").isLessThan(TimeUnit.MILLISECONDS.toNanos(5));
        assertThat(slowestAtOnce)
                .as("every one of them far sooner than the timeout (a loaded machine may pause a call)")
                .isLessThan(TIMEOUT.toNanos() / 2);
        assertThat(healthyFromFailureMode)
                .as("the other masters' keys are decided on Redis all along")
                .isZero();
        assertThat(admitted).as("exactly their limit").containsOnly(LIMIT);
        assertThat(recoveredAt - promotedAt.get())
                .as("the dead master's keys decided on Redis soon after the promotion")
                .isLessThan(TimeUnit.SECONDS.toNanos(3));

        for (long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                store.isStoreDown() && System.nanoTime() < end; ) {
            limiter.tryAcquireSourced(healthyKeys.get(0), 1);
            Thread.sleep(10);
        }
        assertThat(store.isStoreDown()).as("the dead master's outage ended").isFalse();
        assertThat(this.logs.messages(Level.WARN))
                .singleElement()
                .asString()
                .startsWith("Throttle store 'redis' (node 127.0.0.1:" + deadPort + " (")
                .contains("failure-mode closed applies to its keys until it answers again");
        assertThat(this.logs.messages(Level.INFO))
                .filteredOn((message) -> message.startsWith("Throttle store 'redis'"))
                .singleElement()
                .asString()
                .startsWith("Throttle store 'redis' (node 127.0.0.1:" + deadPort + " (")
                .contains("holds none of its keys any more");
    }

    /**
     * With Redis's default {@code cluster-require-full-coverage yes}, every master answers
     * {@code CLUSTERDOWN} from the moment the dead master is marked failed until its replica is
     * promoted: the keys of the live masters are answered by the failure mode in that window too
     * (each master's outage one WARN naming {@code CLUSTERDOWN}), and decided on Redis again right
     * after the promotion.
     */
    @Test
    void withFullCoverageRequiredEveryMasterAnswersClusterDownUntilThePromotion() throws Exception {
        RedisClusterProcesses cluster = RedisClusterProcesses.startWithReplicas(NODE_TIMEOUT, true);
        this.resources.add(cluster);
        LettuceConnectionFactory factory = cluster.newConnectionFactory();
        this.resources.add(factory::destroy);
        RedisThrottleStore redis = new RedisThrottleStore(factory, "throttle", TIMEOUT);
        ResilientThrottleStore store = new ResilientThrottleStore(redis, FailureMode.CLOSED, null);
        this.resources.add(store);
        SourcedLimiter limiter = (SourcedLimiter) store.limiter(POLICY);
        String healthyKey = keyOn(redis, 1, "healthy");
        awaitTopology(limiter, redis);

        AtomicLong promotedAt = watchPromotion(cluster.replicas().get(0).port());
        long killedAt = System.nanoTime();
        cluster.nodes().get(0).stop();

        long firstDown = 0;
        long lastDown = 0;
        long deadline = killedAt + TimeUnit.SECONDS.toNanos(60);
        while (promotedAt.get() == 0 || System.nanoTime() - promotedAt.get() < TimeUnit.SECONDS.toNanos(3)) {
            assertThat(System.nanoTime()).as("the replica promoted").isLessThan(deadline);
            long start = System.nanoTime();
            if (limiter.tryAcquireSourced(healthyKey, 1).source().isFailureMode()) {
                firstDown = (firstDown == 0) ? start : firstDown;
                lastDown = start;
            }
            Thread.sleep(10);
        }
        System.out.printf(
                "cluster-require-full-coverage yes: a live master's keys answered by the failure mode from %d ms "
                        + "after the kill for %d ms, until %d ms after the promotion (promoted %d ms after the kill)%n",
                TimeUnit.NANOSECONDS.toMillis(firstDown - killedAt),
                TimeUnit.NANOSECONDS.toMillis(lastDown - firstDown),
                TimeUnit.NANOSECONDS.toMillis(lastDown - promotedAt.get()),
                TimeUnit.NANOSECONDS.toMillis(promotedAt.get() - killedAt));

        assertThat(firstDown)
                .as("a live master's keys went to the failure mode")
                .isNotZero();
        assertThat(lastDown - promotedAt.get())
                .as("and came back to Redis soon after the promotion")
                .isLessThan(TimeUnit.SECONDS.toNanos(2));
        assertThat(this.logs.messages(Level.WARN))
                .as("the live master's outage names CLUSTERDOWN")
                .anySatisfy((message) -> assertThat(message)
                        .doesNotContain(
                                "node 127.0.0.1:" + cluster.nodes().get(0).port() + " (")
                        .contains("CLUSTERDOWN"));
    }

    /** Waits until the store has read the cluster's topology: keys are told apart by master. */
    private static void awaitTopology(Limiter limiter, RedisThrottleStore redis) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (limiter.partition(keyOn(redis, 0, "warm")) == Limiter.ONE_PARTITION) {
            assertThat(System.nanoTime()).as("the topology read").isLessThan(end);
            limiter.tryAcquire(keyOn(redis, 0, "warm"), 1);
            Thread.sleep(10);
        }
        for (int range = 0; range < RedisClusterProcesses.SLOT_RANGES.length; range++) {
            limiter.tryAcquire(keyOn(redis, range, "warm"), 1);
        }
    }

    /** Polls the replica until it says it is a master; returns when it did, in {@link System#nanoTime()}. */
    private AtomicLong watchPromotion(int replicaPort) {
        AtomicLong promotedAt = new AtomicLong();
        RedisClient client = RedisClient.create(RedisURI.create("127.0.0.1", replicaPort));
        StatefulRedisConnection<String, String> connection = client.connect();
        Thread watcher = new Thread(
                () -> {
                    while (promotedAt.get() == 0 && connection.isOpen()) {
                        try {
                            if (connection.sync().info("replication").contains("role:master")) {
                                promotedAt.set(System.nanoTime());
                            }
                            Thread.sleep(5);
                        } catch (InterruptedException ex) {
                            return;
                        } catch (RuntimeException ex) {
                            // closed at the end of the test
                        }
                    }
                },
                "promotion-watcher");
        watcher.setDaemon(true);
        watcher.start();
        this.resources.add(() -> client.shutdown(Duration.ZERO, Duration.ofSeconds(1)));
        return promotedAt;
    }

    /** A key whose Redis key hashes into the slot range of master {@code range}. */
    private static String keyOn(RedisThrottleStore redis, int range, String name) {
        int[] slots = RedisClusterProcesses.SLOT_RANGES[range];
        for (int i = 0; ; i++) {
            String key = name + "-" + i;
            int slot = SlotHash.getSlot(redis.redisKey(POLICY.name(), key));
            if (slot >= slots[0] && slot <= slots[1]) {
                return key;
            }
        }
    }

    private record Call(long start, long tookNanos, boolean failureMode) {}
}
