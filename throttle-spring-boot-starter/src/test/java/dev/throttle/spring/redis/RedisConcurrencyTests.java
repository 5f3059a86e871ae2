package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.BoundPolicy;
import dev.throttle.ConcurrencyPolicy;
import dev.throttle.Decision;
import dev.throttle.Slot;
import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.testing.Eventually;
import dev.throttle.testing.redis.RedisProcess;
import dev.throttle.testing.redis.SharedRedis;
import dev.throttle.testing.redis.SharedRedis.WithRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Concurrency slots on a real Redis, on Redis's own clock (no test clock): two stores sharing one
 * Redis (two instances of an application) share the count, a slot frees itself when its lease runs
 * out by Redis time, and while Redis is down each failure mode decides.
 */
@WithRedis
class RedisConcurrencyTests {

    private static LettuceConnectionFactory connectionFactory;

    @BeforeAll
    static void connect() {
        connectionFactory = SharedRedis.endpoint().newConnectionFactory();
    }

    @AfterAll
    static void disconnect() {
        connectionFactory.destroy();
    }

    private static RedisThrottleStore store(LettuceConnectionFactory factory) {
        return new RedisThrottleStore(factory, "conc", Duration.ofSeconds(2));
    }

    /**
     * 64 threads on one key with a limit of 3, half through each of two stores sharing one Redis:
     * counted inside the guarded work, never more than 3 run at once.
     */
    @Test
    void twoInstancesSharingRedisNeverHaveMoreThanTheLimitInProgress() throws Exception {
        ConcurrencyPolicy three = new ConcurrencyPolicy("three", 3, Duration.ofMinutes(1));
        try (RedisThrottleStore first = store(connectionFactory);
                RedisThrottleStore second = store(connectionFactory)) {
            Throttler[] instances = {new Throttler(first, List.of(three)), new Throttler(second, List.of(three))};
            instances[0].reset("three", "hot");
            AtomicInteger inProgress = new AtomicInteger();
            AtomicInteger most = new AtomicInteger();
            AtomicInteger ran = new AtomicInteger();
            int threads = 64;
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                CountDownLatch start = new CountDownLatch(1);
                List<Future<?>> done = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    Throttler throttler = instances[t % 2];
                    done.add(pool.submit(() -> {
                        start.await();
                        for (int i = 0; i < 10; i++) {
                            try (Slot slot = throttler.enter("three", "hot")) {
                                int now = inProgress.incrementAndGet();
                                most.accumulateAndGet(now, Math::max);
                                ran.incrementAndGet();
                                Thread.sleep(1);
                                inProgress.decrementAndGet();
                            } catch (ThrottledException refused) {
                                Thread.yield();
                            }
                        }
                        return null;
                    }));
                }
                start.countDown();
                for (Future<?> future : done) {
                    future.get(5, TimeUnit.MINUTES);
                }
            } finally {
                pool.shutdownNow();
            }
            assertThat(most.get()).isBetween(1, 3);
            assertThat(ran.get()).as("slots were taken and released").isGreaterThan(3);
            assertThat(instances[1].peek("three", "hot").remaining())
                    .as("every slot released")
                    .isEqualTo(3);
        }
    }

    @Test
    void aSlotNeverReleasedFreesItselfWhenItsLeaseRunsOutByRedisTime() {
        ConcurrencyPolicy brief = new ConcurrencyPolicy("brief", 1, Duration.ofMillis(500));
        try (RedisThrottleStore store = store(connectionFactory)) {
            Throttler throttler = new Throttler(store, List.of(brief));
            throttler.reset("brief", "k");
            Decision taken = throttler.tryAcquire("brief", "k");
            assertThat(taken.allowed()).isTrue();
            Decision refused = throttler.tryAcquire("brief", "k");
            assertThat(refused.allowed()).isFalse();
            assertThat(refused.retryAfterMillis()).isBetween(1L, 500L);
            Eventually.until(
                    "the lease ran out", () -> throttler.peek("brief", "k").allowed());
            Decision next = throttler.tryAcquire("brief", "k");
            assertThat(next.allowed()).isTrue();
            throttler.bound("brief").refund("k", 1, taken);
            assertThat(throttler.tryAcquire("brief", "k").allowed())
                    .as("the expired slot's late release freed the newer one")
                    .isFalse();
        }
    }

    @ParameterizedTest
    @EnumSource(FailureMode.class)
    void whileRedisIsDownTheFailureModeDecidesAndReleasesNeverThrow(FailureMode mode) {
        ConcurrencyPolicy one = new ConcurrencyPolicy("one", 1, Duration.ofSeconds(30));
        RedisProcess redis = RedisProcess.startStandalone();
        LettuceConnectionFactory factory = redis.endpoint().newConnectionFactory();
        try (ResilientThrottleStore store = new ResilientThrottleStore(
                new RedisThrottleStore(factory, "conc", Duration.ofMillis(200)),
                mode,
                new MemoryThrottleStore(TimeSource.system(), 1000))) {
            Throttler throttler = new Throttler(store, List.of(one));
            BoundPolicy slots = throttler.bound("one");
            Eventually.until("Redis answers", () -> {
                Decision probe = slots.tryAcquire("probe", 1);
                slots.refund("probe", 1, probe);
                return probe.allowed() && !store.isStoreDown();
            });
            Decision held = slots.tryAcquire("k", 1);
            assertThat(held.allowed()).isTrue();
            redis.stop();
            Eventually.until("the outage is seen", () -> {
                slots.peek("k");
                return store.isStoreDown();
            });
            Decision during = slots.tryAcquire("k", 1);
            switch (mode) {
                case OPEN -> assertThat(during.allowed()).isTrue();
                case CLOSED -> assertThat(during.allowed()).isFalse();
                case LOCAL -> {
                    assertThat(during.allowed()).as("this instance's own slots").isTrue();
                    assertThat(slots.tryAcquire("k", 1).allowed())
                            .as("the local limit holds")
                            .isFalse();
                }
            }
            slots.refund("k", 1, during);
            slots.refund("k", 1, held);
            if (mode == FailureMode.LOCAL) {
                assertThat(slots.tryAcquire("k", 1).allowed())
                        .as("the local slot was released")
                        .isTrue();
            }
        } finally {
            factory.destroy();
            redis.stop();
        }
    }
}
