package dev.throttle.spring.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.testing.jdbc.SharedPostgres;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * 64 threads on one key, split between two stores with pools of their own (two instances of an
 * application), never get more passes than the policy holds, on the database's clock: the key's
 * row lock serialises them, with no retry.
 */
class JdbcConcurrencyTests {

    private static final int THREADS = 64;

    private static final int CALLS_PER_THREAD = 40;

    private final List<AutoCloseable> closing = new ArrayList<>();

    private JdbcThrottleStore first;

    private JdbcThrottleStore second;

    @BeforeEach
    void twoInstances() {
        SharedPostgres.clear();
        this.first = store();
        this.second = store();
    }

    private JdbcThrottleStore store() {
        HikariDataSource pool = SharedPostgres.newDataSource(8);
        JdbcThrottleStore store = new JdbcThrottleStore(pool, "throttle_", Duration.ofSeconds(30), 8, null, null, 0);
        this.closing.add(store);
        this.closing.add(pool);
        return store;
    }

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable closeable : this.closing) {
            closeable.close();
        }
    }

    // periods of a day: a unit comes back every 86 s, far beyond the test's few seconds on a busy host
    // (with an hour, one came back every 3.6 s and a slow run rightly let 1,001 through)

    @Test
    void sixtyFourThreadsOnOneTokenBucketKeyGetExactlyItsCapacity() throws Exception {
        assertThat(passes(TokenBucketPolicy.of("tb", 1_000, Duration.ofDays(1))))
                .isEqualTo(1_000);
    }

    @Test
    void sixtyFourThreadsOnOneGcraKeyGetExactlyItsLimit() throws Exception {
        assertThat(passes(new GcraPolicy("gcra", 1_000, Duration.ofDays(1)))).isEqualTo(1_000);
    }

    @Test
    void sixtyFourThreadsOnOneFixedWindowKeyGetExactlyItsLimitWhenEveryCallIsTheKeysFirst() throws Exception {
        // no row yet: the first calls race to insert it, and still only the limit passes
        assertThat(passes(new FixedWindowPolicy("fw", 1_000, Duration.ofHours(1))))
                .isEqualTo(1_000);
    }

    private long passes(Policy policy) throws Exception {
        Limiter onFirst = this.first.limiter(policy);
        Limiter onSecond = this.second.limiter(policy);
        ExecutorService threads = Executors.newFixedThreadPool(THREADS);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<Long>> results = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                Limiter limiter = (t % 2 == 0) ? onFirst : onSecond;
                Callable<Long> calls = () -> {
                    start.await();
                    long passed = 0;
                    for (int i = 0; i < CALLS_PER_THREAD; i++) {
                        passed += limiter.tryAcquire("hot", 1).allowed() ? 1 : 0;
                    }
                    return passed;
                };
                results.add(threads.submit(calls));
            }
            start.countDown();
            long total = 0;
            for (Future<Long> result : results) {
                total += result.get(5, TimeUnit.MINUTES);
            }
            return total;
        } finally {
            threads.shutdownNow();
        }
    }
}
