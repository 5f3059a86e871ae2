package dev.throttle.spring.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import dev.throttle.Limiter;
import dev.throttle.testing.jdbc.SharedPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The second application instance of {@link JdbcTwoJvmTests}: a JVM of its own with its own pool and
 * store, on the same database. It prints {@code ready}, waits for the test's go (a row of policy
 * {@value #GO} whose expiry is the moment both JVMs start, on the machine's clock), runs its threads on
 * the hot key from that moment and prints how many calls passed; exit code 1, with the stack trace, on
 * failure.
 */
public final class JdbcSecondJvm {

    static final String GO = "go";

    private JdbcSecondJvm() {}

    /**
     * Runs the worker.
     * @param args JDBC URL, threads, calls per thread
     * @throws Exception on failure
     */
    public static void main(String[] args) throws Exception {
        String url = args[0];
        int threads = Integer.parseInt(args[1]);
        int calls = Integer.parseInt(args[2]);
        try (HikariDataSource pool = SharedPostgres.newDataSource(url, 8);
                JdbcThrottleStore store =
                        new JdbcThrottleStore(pool, "throttle_", Duration.ofSeconds(30), 8, null, null, 0)) {
            Limiter limiter = store.limiter(JdbcTwoJvmTests.POLICY);
            limiter.peek("warm-up");
            System.out.println("ready");
            long deadline = System.currentTimeMillis() + 60_000;
            long startAt;
            while ((startAt = go(pool)) < 0) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("no go");
                }
                Thread.sleep(1);
            }
            System.out.println("passed " + run(limiter, threads, calls, startAt));
        }
        System.exit(0);
    }

    /** The moment to start at, or -1 before the go. */
    private static long go(HikariDataSource pool) throws Exception {
        try (Connection connection = pool.getConnection();
                Statement statement = connection.createStatement();
                ResultSet result = statement.executeQuery(
                        "SELECT expires_at FROM throttle_state WHERE policy_name = '" + GO + "'")) {
            return result.next() ? result.getLong(1) : -1;
        }
    }

    /**
     * Runs {@code threads} threads of {@code calls} acquires each on the hot key, all released at
     * {@code startAt} (epoch ms): the store decides hundreds of calls in the time a JVM takes to see
     * the go, so both JVMs start on the clock rather than on seeing it. Returns the passes.
     */
    static long run(Limiter limiter, int threads, int calls, long startAt) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<Long>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                results.add(pool.submit(() -> {
                    start.await();
                    long passed = 0;
                    for (int i = 0; i < calls; i++) {
                        passed += limiter.tryAcquire("hot", 1).allowed() ? 1 : 0;
                    }
                    return passed;
                }));
            }
            Thread.sleep(Math.max(0, startAt - System.currentTimeMillis()));
            start.countDown();
            long total = 0;
            for (Future<Long> result : results) {
                total += result.get(5, TimeUnit.MINUTES);
            }
            return total;
        } finally {
            pool.shutdownNow();
        }
    }
}
