package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ConcurrencyPolicy;
import dev.throttle.Decision;
import dev.throttle.Slot;
import dev.throttle.Throttler;
import dev.throttle.testing.redis.SharedRedis;
import dev.throttle.testing.redis.SharedRedis.WithRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Calls that wait for a concurrency slot, on two stores sharing one real Redis (two instances of an
 * application), on Redis's own clock: a slot one instance releases is taken at once by a call waiting
 * on the other, told by the store's events channel; without the near cache (no events) the waiter
 * still gets it, after its one-second hint.
 */
@WithRedis
class RedisSlotWaitingTests {

    private static final ConcurrencyPolicy ONE = new ConcurrencyPolicy("one", 1, Duration.ofMinutes(1));

    private static LettuceConnectionFactory connectionFactory;

    @BeforeAll
    static void connect() {
        connectionFactory = SharedRedis.endpoint().newConnectionFactory();
    }

    @AfterAll
    static void disconnect() {
        connectionFactory.destroy();
    }

    private static RedisThrottleStore withEvents() throws Exception {
        RedisThrottleStore store = new RedisThrottleStore(
                connectionFactory,
                "waits",
                Duration.ofSeconds(2),
                null,
                NearCacheSettings.of(1000, Duration.ofMillis(50)));
        store.eventsSubscribed().get(10, TimeUnit.SECONDS);
        return store;
    }

    @Test
    void aSlotReleasedByOneInstanceIsTakenAtOnceByACallWaitingOnTheOther() throws Exception {
        try (RedisThrottleStore first = withEvents();
                RedisThrottleStore second = withEvents()) {
            Throttler a = new Throttler(first, List.of(ONE));
            Throttler b = new Throttler(second, List.of(ONE));
            a.reset("one", "k");
            Slot held = a.enter("one", "k");
            CompletableFuture<Decision> waiter =
                    b.acquireAsync("one", "k", 1, Duration.ofSeconds(20)).toCompletableFuture();
            // just after the waiter's retry at its one-second hint: its next comes a second later
            Thread.sleep(1_100);
            assertThat(waiter).as("the only slot is held on the other instance").isNotDone();
            long released = System.nanoTime();
            held.close();
            Decision slot = waiter.get(20, TimeUnit.SECONDS);
            long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - released);
            assertThat(slot.allowed()).isTrue();
            assertThat(tookMillis)
                    .as("told by the other instance's release, not by the one-second hint")
                    .isLessThan(500);
            assertThat(a.peek("one", "k").remaining()).isZero();
            b.bound("one").refund("k", 1, slot);
            assertThat(a.peek("one", "k").remaining()).isOne();
        }
    }

    @Test
    void withoutEventsAWaiterOnTheOtherInstanceGetsTheSlotAfterItsHint() throws Exception {
        try (RedisThrottleStore first = new RedisThrottleStore(connectionFactory, "waits", Duration.ofSeconds(2));
                RedisThrottleStore second = new RedisThrottleStore(connectionFactory, "waits", Duration.ofSeconds(2))) {
            Throttler a = new Throttler(first, List.of(ONE));
            Throttler b = new Throttler(second, List.of(ONE));
            a.reset("one", "k");
            Slot held = a.enter("one", "k");
            CompletableFuture<Decision> waiter =
                    b.acquireAsync("one", "k", 1, Duration.ofSeconds(20)).toCompletableFuture();
            Thread.sleep(300);
            assertThat(waiter).as("waiting while the slot is held").isNotDone();
            held.close();
            long released = System.nanoTime();
            Decision slot = waiter.get(20, TimeUnit.SECONDS);
            long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - released);
            assertThat(slot.allowed()).isTrue();
            // no event reaches the other instance: its waiter asks again after the hint (at most 1 s),
            // not only at the end of its 20 s wait
            assertThat(tookMillis)
                    .as("ms from the release to the waiter's slot")
                    .isLessThan(5_000);
            b.bound("one").refund("k", 1, slot);
        }
    }

    /**
     * 32 threads on each of two instances wait for one of 3 slots of one key: every call runs,
     * never more than 3 at once across both.
     */
    @Test
    void sixtyFourWaitingCallsOnTwoInstancesAllRunAndNeverMoreThanTheLimitAtOnce() throws Exception {
        ConcurrencyPolicy three = new ConcurrencyPolicy("three", 3, Duration.ofMinutes(1));
        try (RedisThrottleStore first = withEvents();
                RedisThrottleStore second = withEvents()) {
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
                        try (Slot slot = throttler.enter("three", "hot", Duration.ofMinutes(2))) {
                            int now = inProgress.incrementAndGet();
                            most.accumulateAndGet(now, Math::max);
                            ran.incrementAndGet();
                            Thread.sleep(5);
                            inProgress.decrementAndGet();
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
            assertThat(ran.get()).as("every call waited for its slot and ran").isEqualTo(threads);
            assertThat(instances[1].peek("three", "hot").remaining())
                    .as("every slot released")
                    .isEqualTo(3);
        }
    }
}
