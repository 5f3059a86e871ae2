package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import dev.throttle.BoundPolicy;
import dev.throttle.Decision;
import dev.throttle.DecisionSource;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.LockoutPolicy;
import dev.throttle.SourcedDecision;
import dev.throttle.SourcedLimiter;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.testing.Eventually;
import dev.throttle.testing.ThrottleLogs;
import dev.throttle.testing.redis.RedisProcess;
import dev.throttle.testing.redis.RedisServers;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * {@code durability: replicated} on a real master and replica: a decision is answered once the
 * replica has it; one that no replica confirms is answered by the failure mode, kept for the store
 * and applied to it once a replica confirms writes again, so that nothing the failure mode let in is
 * missing from Redis afterwards; and the outage this makes is one outage, for every policy.
 */
@Tag("redis-topology")
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class RedisReplicatedDurabilityTests {

    private static final FixedWindowPolicy LOGIN = new FixedWindowPolicy("login", 1_000, Duration.ofHours(1));

    /** A policy without durability on the same store. */
    private static final FixedWindowPolicy API = new FixedWindowPolicy("api", 1_000_000, Duration.ofHours(1));

    private static final Duration TIMEOUT = Duration.ofSeconds(1);

    /** Who decided a call that Redis decided. */
    private static final DecisionSource ON_REDIS = DecisionSource.store("redis");

    @RegisterExtension
    final RedisServers servers = new RedisServers();

    @RegisterExtension
    final ThrottleLogs logs = new ThrottleLogs();

    @Test
    void aReplicatedDecisionIsOnTheReplicaWhenItIsAnswered() {
        RedisServers.MasterAndReplica pair = this.servers.masterWithReplica();
        RedisProcess master = pair.master();
        RedisProcess replica = pair.replica();
        RedisCommands<String, String> onReplica = this.servers.commands(replica);
        ResilientThrottleStore store = store(master, Set.of("login"));
        BoundPolicy login = new Throttler(store, List.of(LOGIN)).bound("login");

        for (int i = 1; i <= 20; i++) {
            String user = "user-" + i;
            assertThat(login.tryAcquire(user, 1).allowed()).isTrue();
            // read at once, without waiting: WAIT answered only once the replica had the write
            assertThat(onReplica.exists("throttle:{login:" + user + "}"))
                    .as("%s's count on the replica when its decision was answered", user)
                    .isEqualTo(1L);
        }
        assertThat(store.isStoreDown()).isFalse();
        assertThat(this.logs.messages(Level.WARN)).isEmpty();
    }

    @Test
    void decisionsMadeAtOnceShareWaitsAndAreEachOnTheReplicaWhenAnswered() throws Exception {
        RedisServers.MasterAndReplica pair = this.servers.masterWithReplica();
        RedisProcess master = pair.master();
        RedisProcess replica = pair.replica();
        // a timeout long enough that a loaded host never answers one of these by the failure mode
        ResilientThrottleStore store = store(master, Set.of("login"), Duration.ofSeconds(10));
        SourcedLimiter login = (SourcedLimiter) store.limiter(LOGIN);
        assertThat(login.tryAcquireSourced("warm-up", 1).source()).isEqualTo(ON_REDIS);
        this.servers.commands(master).configResetstat();

        int threads = 8;
        int each = 40;
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
        try {
            List<java.util.concurrent.Future<Integer>> missing = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                RedisCommands<String, String> reader = this.servers.commands(replica);
                missing.add(pool.submit(() -> {
                    int notThere = 0;
                    for (int i = 0; i < each; i++) {
                        String user = "user-" + thread + "-" + i;
                        SourcedDecision decision = login.tryAcquireSourced(user, 1);
                        assertThat(decision.decision().allowed()).isTrue();
                        assertThat(decision.source()).as("decided by Redis").isEqualTo(ON_REDIS);
                        notThere += (reader.exists("throttle:{login:" + user + "}") == 1) ? 0 : 1;
                    }
                    return notThere;
                }));
            }
            for (java.util.concurrent.Future<Integer> thread : missing) {
                assertThat(thread.get(60, java.util.concurrent.TimeUnit.SECONDS))
                        .as("decisions answered before the replica had them")
                        .isZero();
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(store.isStoreDown()).isFalse();
        String stats = this.servers.commands(master).info("commandstats");
        long waits = Long.parseLong(stats.replaceAll("(?s).*cmdstat_wait:calls=(\\d+).*", "$1"));
        assertThat(waits)
                .as("WAITs for %d decisions made at once by %d callers", threads * each, threads)
                .isLessThan(threads * each);
    }

    @Test
    void aDecisionNoReplicaConfirmsIsAnsweredByTheFailureModeAndCountsInRedisOnceAReplicaConfirmsAgain() {
        RedisServers.MasterAndReplica pair = this.servers.masterWithReplica();
        RedisProcess master = pair.master();
        RedisProcess replica = pair.replica();
        RedisCommands<String, String> onReplica = this.servers.commands(replica);
        ResilientThrottleStore store = store(master, Set.of("login"));
        Throttler throttler = new Throttler(store, List.of(LOGIN, API));
        BoundPolicy login = throttler.bound("login");
        BoundPolicy api = throttler.bound("api");
        for (int i = 0; i < 10; i++) {
            assertThat(login.tryAcquire("mallory", 1).allowed()).isTrue();
        }
        assertThat(api.tryAcquire("someone", 1).allowed()).isTrue();

        // the replica leaves, as a replica promoted by a failover does: the master still takes writes
        onReplica.replicaofNoOne();
        Eventually.until(
                "the master sees no replica",
                () -> this.servers.commands(master).info("replication").contains("connected_slaves:0"));
        long started = System.nanoTime();
        assertThat(login.tryAcquire("mallory", 1).allowed())
                .as("answered by the failure mode (local)")
                .isTrue();
        assertThat(Duration.ofNanos(System.nanoTime() - started))
                .as("WAIT gives up within three quarters of the timeout, so the call is answered within it")
                .isLessThan(TIMEOUT);
        assertThat(store.isStoreDown())
                .as("a write no replica confirms is an outage at once")
                .isTrue();
        int allowedMeanwhile = 1;
        long calmUntil = System.nanoTime() + Duration.ofSeconds(2).toNanos();
        while (System.nanoTime() < calmUntil) {
            // a policy without durability (batched) starts probes too: its writes would succeed, but the
            // outage lasts while the master has no replica to confirm the others'
            api.tryAcquire("someone", 1);
            long call = System.nanoTime();
            Decision decision = login.tryAcquire("mallory", 1);
            assertThat(Duration.ofNanos(System.nanoTime() - call))
                    .as("answered at once during the outage")
                    .isLessThan(TIMEOUT.dividedBy(2));
            allowedMeanwhile += decision.allowed() ? 1 : 0;
            assertThat(store.isStoreDown()).as("still one outage").isTrue();
            sleep(20);
        }

        onReplica.replicaof("127.0.0.1", master.port());
        Eventually.until("Redis decides again", () -> {
            api.tryAcquire("someone", 1);
            return !store.isStoreDown();
        });
        Eventually.until(
                "the end of the outage is logged",
                () -> this.logs.messages(Level.INFO).stream().anyMatch((message) -> message.contains("answers again")));
        int counted = LOGIN.quota() - store.limiter(LOGIN).peek("mallory").remaining();
        // every call the failure mode let in now counts in Redis. Some count twice, the side the limit
        // is for: the first reached the master before WAIT gave up, and a replay that reached the master
        // but got no confirmation in time (behind a probe's WAIT on the one connection) is replayed again
        assertThat(counted)
                .as("allowed: 10 by Redis, %d by the failure mode", allowedMeanwhile)
                .isGreaterThanOrEqualTo(10 + allowedMeanwhile + 1)
                .isLessThan(2 * (10 + allowedMeanwhile));
        assertThat(onReplica.get("throttle:{login:mallory}"))
                .as("and the replica has it")
                .isNotNull();
        assertThat(this.logs.messages(Level.WARN))
                .singleElement()
                .satisfies((message) -> assertThat(message).contains("NOTREPLICATED"));
        assertThat(this.logs.messages(Level.INFO).stream().filter((message) -> message.contains("answers again")))
                .hasSize(1);
    }

    @Test
    void aLockoutAndItsResetMadeWhileNoReplicaConfirmsHoldInRedisAfterwards() {
        RedisServers.MasterAndReplica pair = this.servers.masterWithReplica();
        RedisProcess master = pair.master();
        RedisProcess replica = pair.replica();
        RedisCommands<String, String> onReplica = this.servers.commands(replica);
        LockoutPolicy lockout = LockoutPolicy.of("lock", List.of(Duration.ofHours(1)));
        ResilientThrottleStore store = store(master, Set.of("lock"));
        BoundPolicy lock = new Throttler(store, List.of(lockout)).bound("lock");
        assertThat(lock.tryAcquire("carol", 1).allowed()).isTrue();

        onReplica.replicaofNoOne();
        Eventually.until(
                "the master sees no replica",
                () -> this.servers.commands(master).info("replication").contains("connected_slaves:0"));
        // mallory is locked out and carol unlocked while the failure mode answers
        int guesses = 0;
        while (lock.tryAcquire("mallory", 1).allowed()) {
            guesses++;
            assertThat(guesses).as("the local lockout holds").isLessThan(lockout.quota() + 2);
        }
        lock.reset("carol");
        assertThat(store.isStoreDown()).isTrue();

        onReplica.replicaof("127.0.0.1", master.port());
        Eventually.until("Redis decides again", () -> {
            lock.peek("nobody");
            return !store.isStoreDown();
        });
        assertThat(store.limiter(lockout).peek("mallory").allowed())
                .as("mallory's lockout, earned while no replica confirmed, holds in Redis")
                .isFalse();
        assertThat(store.limiter(lockout).peek("carol"))
                .as("carol's unlock holds in Redis")
                .isEqualTo(store.limiter(lockout).peek("never-seen"));
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    private ResilientThrottleStore store(RedisProcess redis, Set<String> replicated) {
        return store(redis, replicated, TIMEOUT);
    }

    private ResilientThrottleStore store(RedisProcess redis, Set<String> replicated, Duration timeout) {
        LettuceConnectionFactory connectionFactory = redis.endpoint().newConnectionFactory();
        this.servers.closeAfter(connectionFactory::destroy);
        RedisThrottleStore store = new RedisThrottleStore(
                connectionFactory, "throttle", timeout, null, NearCacheSettings.disabled(), true, replicated);
        this.servers.closeAfter(store::close);
        return new ResilientThrottleStore(
                store, FailureMode.LOCAL, new MemoryThrottleStore(TimeSource.system(), 10_000));
    }
}
