package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import dev.throttle.BoundPolicy;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.spring.bans.ActiveBan;
import dev.throttle.testing.Eventually;
import dev.throttle.testing.ThrottleLogs;
import dev.throttle.testing.redis.RedisProcess;
import dev.throttle.testing.redis.RedisServers;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.sentinel.api.StatefulRedisSentinelConnection;
import io.lettuce.core.sentinel.api.sync.RedisSentinelCommands;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.data.redis.connection.RedisSentinelConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * A graceful Sentinel failover ({@code SENTINEL FAILOVER}: the replica promoted, then the old master
 * made its replica) under a steady caller, on a real master, replica and three Sentinels. Without
 * durability every call is answered within the timeout and nothing counts twice, but what the old
 * master took after the replica left it may be lost; with {@code durability: replicated}, everything
 * any call was allowed counts on the new master afterwards.
 */
@Tag("redis-topology")
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class RedisSentinelFailoverTests {

    private static final String MASTER_NAME = "throttle-master";

    private static final FixedWindowPolicy LOGIN = new FixedWindowPolicy("login", 100_000, Duration.ofHours(1));

    private static final Duration TIMEOUT = Duration.ofSeconds(1);

    @RegisterExtension
    final RedisServers servers = new RedisServers();

    @RegisterExtension
    final ThrottleLogs logs = new ThrottleLogs();

    @Test
    void withReplicatedDurabilityEveryAllowedCallCountsOnTheNewMasterAfterAGracefulFailover() throws Exception {
        Failover failover = failover(Set.of("login"));
        assertThat(failover.counted)
                .as("%d calls allowed (by Redis or the failure mode), none lost", failover.allowed)
                .isGreaterThanOrEqualTo(failover.allowed);
    }

    @Test
    void withoutDurabilityAGracefulFailoverIsAnsweredWithinTheTimeoutAndCountsNothingTwice() throws Exception {
        Failover failover = failover(Set.of());
        // what the old master took after its replica left is lost with it: that is what durability is for
        assertThat(failover.counted)
                .as("%d calls allowed, %d counted: a failover may lose some", failover.allowed, failover.counted)
                .isLessThanOrEqualTo(failover.allowed);
    }

    @Test
    void aReplicatedBanStoredWhileTheOldMasterHasNoReplicaIsOnTheNewMasterAfterTheFailover() throws Exception {
        Topology topology = topology();
        RedisSharedBans bans = new RedisSharedBans(topology.factory, "throttle", Set.of("durable"), TIMEOUT);
        this.servers.closeAfter(bans::close);
        Instant until = Instant.now().plus(Duration.ofHours(1));
        bans.save(new ActiveBan("durable", "before", until), System.currentTimeMillis())
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);

        failOver(topology.sentinel);
        within(
                "Sentinel names the replica as master",
                Duration.ofSeconds(20),
                () -> port(topology.sentinel.getMasterAddrByName(MASTER_NAME)) == topology.replica.port());
        assertThat(replication(topology.master))
                .as("the old master, not turned yet, takes writes no replica follows")
                .contains("role:master");
        long savedAt = System.currentTimeMillis();
        CompletableFuture<Void> durable =
                bans.save(new ActiveBan("durable", "mallory", until), savedAt).toCompletableFuture();
        bans.save(new ActiveBan("plain", "mallory", until), savedAt)
                .toCompletableFuture()
                .get(5, TimeUnit.SECONDS);
        assertThat(durable).as("no replica confirms it on the old master").isNotDone();

        durable.get(40, TimeUnit.SECONDS);
        RedisCommands<String, String> onNewMaster = this.servers.commands(topology.replica);
        assertThat(replication(topology.replica)).contains("role:master");
        assertThat(onNewMaster.zscore("{throttle}:bans", "durable\nmallory"))
                .as("the replicated ban, on the new master")
                .isEqualTo((double) until.toEpochMilli());
        assertThat(onNewMaster.zscore("{throttle}:bans", "durable\nbefore")).isNotNull();
        // the plain ban went to the old master only: what a failover can lose without durability
        System.out.printf(
                "plain ban after the failover: %s%n",
                (onNewMaster.zscore("{throttle}:bans", "plain\nmallory") != null) ? "kept" : "lost");
    }

    /**
     * Runs a caller on "mallory" every 10 ms through a graceful failover, until the store decides on
     * the new master again; checks that every call was answered within the timeout and that the
     * failover made at most one outage, logged once each way.
     */
    /**
     * {@code SENTINEL FAILOVER}, sent again while Sentinel answers {@code NOGOODSLAVE}: a Sentinel that
     * has not read the replica's {@code INFO} recently enough (every 10 s, slower on a loaded host) does
     * not yet count it as a replica it may promote.
     */
    private static void failOver(RedisSentinelCommands<String, String> sentinel) {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            try {
                assertThat(sentinel.failover(MASTER_NAME)).isEqualTo("OK");
                return;
            } catch (io.lettuce.core.RedisCommandExecutionException ex) {
                assertThat(ex.getMessage()).startsWith("NOGOODSLAVE");
                assertThat(System.nanoTime()).as("Sentinel takes the failover").isLessThan(deadline);
                sleep(500);
            }
        }
    }

    /** A master, its replica and three Sentinels, and a connection factory through the Sentinels. */
    private Topology topology() {
        RedisServers.MasterAndReplica pair = this.servers.masterWithReplica();
        RedisProcess master = pair.master();
        RedisProcess replica = pair.replica();
        List<RedisProcess> sentinels = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            RedisProcess sentinel = RedisProcess.startSentinel(MASTER_NAME, master, 2);
            this.servers.closeAfter(sentinel::stop);
            sentinels.add(sentinel);
        }
        RedisSentinelCommands<String, String> sentinel = sentinel(sentinels.get(0));
        Eventually.until(
                "Sentinel knows the replica",
                () -> sentinel.replicas(MASTER_NAME).stream()
                        .anyMatch((known) -> String.valueOf(replica.port()).equals(known.get("port"))
                                && !known.get("flags").contains("down")));
        RedisSentinelConfiguration configuration = new RedisSentinelConfiguration().master(MASTER_NAME);
        for (RedisProcess node : sentinels) {
            configuration.sentinel("127.0.0.1", node.port());
        }
        LettuceConnectionFactory connectionFactory = new LettuceConnectionFactory(configuration);
        connectionFactory.afterPropertiesSet();
        connectionFactory.start();
        this.servers.closeAfter(connectionFactory::destroy);
        return new Topology(master, replica, sentinel, connectionFactory);
    }

    private record Topology(
            RedisProcess master,
            RedisProcess replica,
            RedisSentinelCommands<String, String> sentinel,
            LettuceConnectionFactory factory) {}

    private Failover failover(Set<String> replicated) throws Exception {
        Topology topology = topology();
        RedisProcess master = topology.master;
        RedisProcess replica = topology.replica;
        RedisSentinelCommands<String, String> sentinel = topology.sentinel;
        LettuceConnectionFactory connectionFactory = topology.factory;
        RedisThrottleStore redis = new RedisThrottleStore(
                connectionFactory, "throttle", TIMEOUT, null, NearCacheSettings.disabled(), true, replicated);
        this.servers.closeAfter(redis::close);
        ResilientThrottleStore store = new ResilientThrottleStore(
                redis, FailureMode.LOCAL, new MemoryThrottleStore(TimeSource.system(), 10_000));
        BoundPolicy login = new Throttler(store, List.of(LOGIN)).bound("login");
        Eventually.until("Redis decides", () -> login.tryAcquire("warm-up", 1).allowed() && !store.isStoreDown());

        AtomicBoolean calling = new AtomicBoolean(true);
        AtomicInteger allowed = new AtomicInteger();
        AtomicLong slowest = new AtomicLong();
        Thread caller = new Thread(() -> {
            while (calling.get()) {
                long started = System.nanoTime();
                if (login.tryAcquire("mallory", 1).allowed()) {
                    allowed.incrementAndGet();
                }
                slowest.accumulateAndGet(System.nanoTime() - started, Math::max);
                sleep(10);
            }
        });
        caller.start();
        try {
            sleep(500);
            failOver(sentinel);
            Eventually.until(
                    "Sentinel names the replica as master",
                    () -> port(sentinel.getMasterAddrByName(MASTER_NAME)) == replica.port());
            // Sentinel turns the old master into a replica when it next reads its INFO: up to ten seconds
            // in which the old master, which no replica follows any more, takes writes
            within(
                    "the old master is the new master's replica, in sync",
                    Duration.ofSeconds(30),
                    () -> replication(master).contains("master_link_status:up"));
            within("the store decides on the new master again", Duration.ofSeconds(20), () -> !store.isStoreDown());
            sleep(1_000);
        } finally {
            calling.set(false);
            caller.join();
        }
        within("nothing is owed to the store", Duration.ofSeconds(20), () -> {
            login.peek("nobody");
            return !store.isStoreDown() && owedApplied(store, login, allowed.get(), replicated.isEmpty());
        });

        assertThat(Duration.ofNanos(slowest.get()))
                .as("the slowest call: answered within the timeout, a reconnect included")
                .isLessThan(TIMEOUT.plusMillis(500));
        List<String> warnings = this.logs.messages(Level.WARN).stream()
                .filter((message) -> message.contains("Throttle store"))
                .toList();
        assertThat(warnings).as("at most one outage").hasSizeLessThanOrEqualTo(1);
        assertThat(this.logs.messages(Level.INFO).stream().filter((message) -> message.contains("answers again")))
                .as("its end, logged once")
                .hasSameSizeAs(warnings);
        assertThat(replication(replica)).contains("role:master");
        return new Failover(allowed.get(), counted(store));
    }

    /** Whether the store holds at least what was allowed (with durability), or holds still (without). */
    private static boolean owedApplied(
            ResilientThrottleStore store, BoundPolicy login, int allowed, boolean withoutDurability) {
        return withoutDurability || counted(store) >= allowed;
    }

    private static int counted(ResilientThrottleStore store) {
        return LOGIN.quota() - store.limiter(LOGIN).peek("mallory").remaining();
    }

    private static void within(String what, Duration limit, java.util.function.BooleanSupplier condition) {
        long deadline = System.nanoTime() + limit.toNanos();
        while (!holds(condition)) {
            assertThat(System.nanoTime()).as("not within %s: %s", limit, what).isLessThan(deadline);
            sleep(50);
        }
    }

    /** Whether the condition holds; a connection that Sentinel closed meanwhile (CLIENT KILL) says not yet. */
    private static boolean holds(java.util.function.BooleanSupplier condition) {
        try {
            return condition.getAsBoolean();
        } catch (io.lettuce.core.RedisException ex) {
            return false;
        }
    }

    private static int port(SocketAddress address) {
        return (address instanceof InetSocketAddress inet) ? inet.getPort() : -1;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * {@code INFO replication} of a server, on a connection of its own: Sentinel closes the clients of
     * a master it turns into a replica.
     */
    private static String replication(RedisProcess redis) {
        return redis.info("replication");
    }

    private RedisSentinelCommands<String, String> sentinel(RedisProcess sentinel) {
        RedisClient client = RedisClient.create(RedisURI.create("127.0.0.1", sentinel.port()));
        // bounded: a client whose connections a Sentinel closed can take long to shut down
        this.servers.closeAfter(
                () -> client.shutdownAsync(0, 1, TimeUnit.SECONDS).get(5, TimeUnit.SECONDS));
        StatefulRedisSentinelConnection<String, String> connection = client.connectSentinel();
        return connection.sync();
    }

    /** What a failover left: calls allowed, and what the new master counts for them. */
    private record Failover(int allowed, int counted) {}
}
