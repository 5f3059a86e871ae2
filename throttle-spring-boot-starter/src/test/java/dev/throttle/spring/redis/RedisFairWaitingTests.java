package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.GcraPolicy;
import dev.throttle.Throttler;
import dev.throttle.testing.redis.SharedRedis;
import dev.throttle.testing.redis.SharedRedis.WithRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Fair and exact waiting across instances: with {@code limit: 10, period: 1s} and 100 concurrent
 * waiters on one key, half on each of two stores (two instances, each its own connection) over one
 * real Redis and Redis's clock, every waiter is let in, in the order its turn was reserved, each turn
 * reserved exactly one interval after the one before, no waiter before its turn, and never faster than
 * the policy allows. Real time, about ten seconds.
 */
@WithRedis
class RedisFairWaitingTests {

    private static final GcraPolicy FAIR = new GcraPolicy("fair", 10, Duration.ofSeconds(1));

    /** A turn's interval, in nanoseconds. */
    private static final long INTERVAL = TimeUnit.MILLISECONDS.toNanos(100);

    /**
     * How much later than an earlier turn a waiter may be let in: a sleeping thread woken late on two
     * shared cores (under a loaded build, hundreds of milliseconds). Order and spacing themselves are
     * proven by the turns the store reserved, which no scheduler can disturb.
     */
    private static final long SLACK = TimeUnit.MILLISECONDS.toNanos(1_000);

    /**
     * One waiter's turn as reserved (its receipt: the score, in Redis microseconds, its turn ends
     * at), when its reservation came back, how long it was told to wait, and when it was let in.
     */
    private record Admitted(long receipt, long reservedAt, long waitMillis, long admittedAt) {}

    @Test
    void hundredWaitersOnTwoInstancesAreLetInInReservationOrderAtTenPerSecondNoneStarved() throws Exception {
        SharedRedis.flush();
        LettuceConnectionFactory first = SharedRedis.endpoint().newConnectionFactory();
        LettuceConnectionFactory second = SharedRedis.endpoint().newConnectionFactory();
        RedisThrottleStore one = new RedisThrottleStore(first, "fair", Duration.ofSeconds(5));
        RedisThrottleStore two = new RedisThrottleStore(second, "fair", Duration.ofSeconds(5));
        ExecutorService pool = Executors.newFixedThreadPool(100);
        try {
            Throttler[] instances = {new Throttler(one, List.of(FAIR)), new Throttler(two, List.of(FAIR))};
            for (Throttler instance : instances) {
                // the script loaded ahead, so that no waiter's round trip is the first
                instance.peek("fair", "warm-up");
            }
            CountDownLatch start = new CountDownLatch(1);
            List<Future<Admitted>> waiters = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                Throttler instance = instances[i % 2];
                waiters.add(pool.submit(() -> {
                    start.await();
                    long asked = System.nanoTime();
                    Decision decision = instance.acquire("fair", "k", 1, Duration.ofSeconds(15));
                    return new Admitted(decision.receipt(), asked, decision.waitMillis(), System.nanoTime());
                }));
            }
            start.countDown();
            List<Admitted> admitted = new ArrayList<>();
            for (Future<Admitted> waiter : waiters) {
                admitted.add(waiter.get(30, TimeUnit.SECONDS));
            }
            assertThat(admitted).as("none starved, none refused").hasSize(100);
            admitted.sort(Comparator.comparingLong(Admitted::receipt));
            assertThat(admitted.stream().map(Admitted::receipt).distinct())
                    .as("every turn reserved once")
                    .hasSize(100);
            for (int i = 1; i < admitted.size(); i++) {
                assertThat(admitted.get(i).receipt() - admitted.get(i - 1).receipt())
                        .as("turn %d is reserved exactly one interval after turn %d", i, i - 1)
                        .isEqualTo(TimeUnit.NANOSECONDS.toMicros(INTERVAL));
                assertThat(admitted.get(i).admittedAt())
                        .as("turn %d is let in no earlier than turn %d, give or take a late wake-up", i, i - 1)
                        .isGreaterThanOrEqualTo(admitted.get(i - 1).admittedAt() - SLACK);
            }
            for (Admitted waiter : admitted) {
                assertThat(waiter.admittedAt() - waiter.reservedAt())
                        .as("a waiter is never let in before the turn it was told to wait for")
                        .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(waiter.waitMillis()));
            }
            assertThat(admitted.subList(0, 10))
                    .as("the burst of 10 waits for nothing")
                    .allSatisfy((waiter) -> assertThat(waiter.waitMillis()).isZero());
            assertThat(admitted.subList(10, 100))
                    .as("every other waiter waits for its turn")
                    .allSatisfy((waiter) -> assertThat(waiter.waitMillis()).isPositive());
            double seconds = (admitted.get(99).admittedAt() - admitted.get(10).admittedAt()) / 1e9;
            assertThat(89 / seconds)
                    .as("the 89 turns after the first after the burst, per second: never faster than 10")
                    .isLessThanOrEqualTo(10.5);
        } finally {
            pool.shutdownNow();
            one.close();
            two.close();
            first.destroy();
            second.destroy();
        }
    }
}
