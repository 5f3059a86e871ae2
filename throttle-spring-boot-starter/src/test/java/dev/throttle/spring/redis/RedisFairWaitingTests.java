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
 * real Redis and Redis's clock, every waiter is let in, in the order its turn was reserved, at 10 per
 * second after the burst, and never faster than the policy allows. Real time, about ten seconds.
 */
@WithRedis
class RedisFairWaitingTests {

    private static final GcraPolicy FAIR = new GcraPolicy("fair", 10, Duration.ofSeconds(1));

    /** A turn's interval, in nanoseconds. */
    private static final long INTERVAL = TimeUnit.MILLISECONDS.toNanos(100);

    /** How late a sleeping thread may wake on two shared cores, and how far apart two JVM clocks read Redis's. */
    private static final long SLACK = TimeUnit.MILLISECONDS.toNanos(60);

    /** One waiter's turn as reserved, and when it was let in. */
    private record Admitted(long receipt, long admittedAt) {}

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
                    Decision decision = instance.acquire("fair", "k", 1, Duration.ofSeconds(15));
                    return new Admitted(decision.receipt(), System.nanoTime());
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
                assertThat(admitted.get(i).admittedAt())
                        .as("turn %d is let in no earlier than turn %d, give or take a late wake-up", i, i - 1)
                        .isGreaterThanOrEqualTo(admitted.get(i - 1).admittedAt() - SLACK);
            }
            long firstIn =
                    admitted.stream().mapToLong(Admitted::admittedAt).min().orElseThrow();
            for (int j = 10; j < admitted.size(); j++) {
                assertThat(admitted.get(j).admittedAt() - firstIn)
                        .as(
                                "after the burst of 10, turn %d comes %d intervals after the first call, never sooner",
                                j, j - 9)
                        .isGreaterThanOrEqualTo((j - 9) * INTERVAL - SLACK);
                for (int i = 10; i < j; i++) {
                    assertThat(admitted.get(j).admittedAt() - admitted.get(i).admittedAt())
                            .as("turns %d and %d are %d intervals apart, never closer", i, j, j - i)
                            .isGreaterThanOrEqualTo((j - i) * INTERVAL - SLACK);
                }
            }
            double seconds = (admitted.get(99).admittedAt() - admitted.get(10).admittedAt()) / 1e9;
            assertThat(89 / seconds)
                    .as("the 89 turns after the first after the burst, per second")
                    .isBetween(9.0, 11.0);
        } finally {
            pool.shutdownNow();
            one.close();
            two.close();
            first.destroy();
            second.destroy();
        }
    }
}
