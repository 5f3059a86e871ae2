package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.throttle.BoundPolicy;
import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Limiter;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.testing.redis.RedisProcess;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Settlements survive an outage, on a real Redis that the test stops and starts again: a Redis that keeps its
 * data (append-only file), so that what it is owed after the outage is visible. A reset made during
 * the outage says it missed Redis and is applied to Redis when it answers again (the user is not
 * locked out any more), a refund of a unit Redis took goes to Redis, and one of a unit the local
 * store took during the outage goes to the local store, never to Redis.
 */
class RedisSettlementsDuringOutageTests {

    private static final FixedWindowPolicy POLICY = new FixedWindowPolicy("login", 3, Duration.ofHours(1));

    private RedisProcess redis;

    private LettuceConnectionFactory connectionFactory;

    private ListAppender<ILoggingEvent> logs;

    @BeforeAll
    static void routeJavaLoggingToLogback() {
        if (!SLF4JBridgeHandler.isInstalled()) {
            SLF4JBridgeHandler.removeHandlersForRootLogger();
            SLF4JBridgeHandler.install();
        }
    }

    @BeforeEach
    void startRedis() {
        // persistent, unlike the other tests' Redis: state must outlive the restart
        this.redis = new RedisProcess(
                RedisProcess.freePort(false), List.of("--appendonly", "yes", "--appendfsync", "always"));
        this.redis.start();
        this.connectionFactory = this.redis.endpoint().newConnectionFactory();
        this.logs = new ListAppender<>();
        this.logs.start();
        ((Logger) LoggerFactory.getLogger("dev.throttle")).addAppender(this.logs);
    }

    @AfterEach
    void stopRedis() {
        ((Logger) LoggerFactory.getLogger("dev.throttle")).detachAppender(this.logs);
        this.connectionFactory.destroy();
        this.redis.stop();
    }

    @Test
    void whatRedisIsOwedFromAnOutageIsAppliedToRedisWhenItIsBack() {
        MemoryThrottleStore local = new MemoryThrottleStore(TimeSource.system(), 1000);
        try (ResilientThrottleStore store = new ResilientThrottleStore(
                        new RedisThrottleStore(this.connectionFactory, "throttle", Duration.ofMillis(100)),
                        FailureMode.LOCAL,
                        local);
                RedisThrottleStore direct =
                        new RedisThrottleStore(this.connectionFactory, "throttle", Duration.ofSeconds(5))) {
            Throttler throttler = new Throttler(store, List.of(POLICY));
            BoundPolicy login = throttler.bound("login");
            Limiter inRedis = direct.limiter(POLICY);
            assertThat(store.warmUp(List.of(POLICY), Duration.ofSeconds(10)))
                    .as("warmed up")
                    .isTrue();
            for (int i = 0; i < 3; i++) {
                assertThat(login.tryAcquire("alice", 1).allowed()).isTrue();
            }
            assertThat(login.tryAcquire("alice", 1).allowed())
                    .as("alice is locked out in Redis")
                    .isFalse();
            Decision bobByRedis = login.tryAcquire("bob", 1);
            Decision carolByRedis = login.tryAcquire("carol", 1);
            for (int i = 0; i < 3; i++) {
                login.tryAcquire("erin", 1); // nothing is owed for erin: her state shows what the restart kept
            }

            this.redis.stop();
            await("the outage is noticed", () -> {
                login.tryAcquire("dave", 1);
                return store.isStoreDown();
            });
            Decision carolByLocal = login.tryAcquire("carol", 1);
            assertThat(carolByLocal.allowed()).isTrue();
            assertThat(local.limiter(POLICY).peek("carol").remaining()).isEqualTo(2);
            assertThat(throttler.reset("login", "alice"))
                    .as("the reset says it missed Redis")
                    .isFalse();
            assertThat(login.tryAcquire("alice", 1).allowed())
                    .as("unlocked on this instance at once")
                    .isTrue();
            login.refund("bob", 1, bobByRedis);
            assertThat(local.limiter(POLICY).peek("bob").remaining())
                    .as("not given to the local store")
                    .isEqualTo(3);
            login.refund("carol", 1, carolByLocal);
            assertThat(local.limiter(POLICY).peek("carol").remaining())
                    .as("given back where it was taken")
                    .isEqualTo(3);

            this.redis.start();
            // what is owed for alice and bob may already be applied by the background probe: erin's
            // state, which nothing settles, shows that Redis kept its data through the restart
            assertThat(inRedis.peek("erin").remaining())
                    .as("Redis kept erin's spent window through its restart")
                    .isZero();
            await("a probe finds Redis", () -> {
                login.peek("probe");
                return !store.isStoreDown();
            });

            assertThat(inRedis.peek("alice").remaining())
                    .as("the reset made during the outage was applied to Redis")
                    .isEqualTo(3);
            assertThat(rawGet("throttle:{login:alice}")).isNull();
            assertThat(inRedis.peek("bob").remaining())
                    .as("so was the refund of bob's unit, which Redis took")
                    .isEqualTo(3);
            assertThat(inRedis.peek("carol").remaining())
                    .as("carol's local unit was not refunded to Redis")
                    .isEqualTo(2);
            assertThat(rawGet("throttle:{login:dave}"))
                    .as("nothing decided during the outage reached Redis")
                    .isNull();
            Decision aliceAgain = login.tryAcquire("alice", 1);
            assertThat(aliceAgain.allowed()).isTrue();
            assertThat(aliceAgain.remaining())
                    .as("decided by Redis, from the reset state")
                    .isEqualTo(2);
            login.refund("carol", 1, carolByRedis);
            assertThat(inRedis.peek("carol").remaining()).isEqualTo(3);
        }
        assertThat(this.logs.list)
                .filteredOn((event) -> event.getLevel() == Level.INFO)
                .extracting(ILoggingEvent::getFormattedMessage)
                .anySatisfy((message) -> assertThat(message)
                        .contains("2 refunds, resets, charges and acquires kept meanwhile applied to it"));
        assertThat(this.logs.list)
                .extracting(ILoggingEvent::getFormattedMessage)
                .allSatisfy((message) -> assertThat(message).doesNotContain("alice", "bob", "carol", "dave", "erin"));
    }

    private String rawGet(String key) {
        RedisClient client = this.redis.endpoint().newClient();
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            return connection.sync().get(key);
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
    }

    private static void await(String what, BooleanSupplier condition) {
        Awaitility.await(what)
                .atMost(Duration.ofSeconds(20))
                .pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(10))
                .until(condition::getAsBoolean);
    }
}
