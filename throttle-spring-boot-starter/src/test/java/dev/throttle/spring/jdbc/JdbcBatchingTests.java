package dev.throttle.spring.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.resilience.RefusalMemory;
import dev.throttle.testing.jdbc.SharedPostgres;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Decisions that wait for a connection at the same moment leave in one statement (one transaction,
 * one commit): exact on a key they share, each caller answered with its own decision, a call the
 * database refuses failing alone, and batches of two instances on keys in common never waiting for
 * each other in a circle. Against a real PostgreSQL, through a pool whose statements are counted.
 */
class JdbcBatchingTests {

    private static final TokenBucketPolicy BATCHED = TokenBucketPolicy.of("batched", 5, Duration.ofDays(1));

    private final List<AutoCloseable> closing = new ArrayList<>();

    private final Map<String, AtomicInteger> statements = new ConcurrentHashMap<>();

    private final List<SQLException> batchFailures = Collections.synchronizedList(new ArrayList<>());

    /** Holds the next connection asked for until released: the store's one thread is busy meanwhile. */
    private volatile CountDownLatch nextConnection = new CountDownLatch(0);

    /** Counted down when the held connection is asked for. */
    private volatile CountDownLatch asked = new CountDownLatch(1);

    @BeforeEach
    void clear() {
        SharedPostgres.clear();
    }

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable closeable : this.closing) {
            closeable.close();
        }
    }

    @Test
    void decisionsThatWaitTogetherLeaveInOneStatementAndStayExactOnTheirKey() throws Exception {
        JdbcThrottleStore store = store(1);
        Limiter limiter = store.limiter(BATCHED);
        CountDownLatch held = holdNextConnection();
        CompletableFuture<Decision> first = limiter.tryAcquireAsync("hot", 1).toCompletableFuture();
        assertThat(this.asked.await(30, TimeUnit.SECONDS)).isTrue();
        List<CompletableFuture<Decision>> waiting = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            waiting.add(limiter.tryAcquireAsync("hot", 1).toCompletableFuture());
        }
        List<CompletableFuture<Decision>> others = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            others.add(limiter.tryAcquireAsync("other-" + i, 1).toCompletableFuture());
        }
        held.countDown();

        assertThat(first.get(30, TimeUnit.SECONDS).allowed()).isTrue();
        long allowed = 0;
        for (CompletableFuture<Decision> decision : waiting) {
            allowed += decision.get(30, TimeUnit.SECONDS).allowed() ? 1 : 0;
        }
        assertThat(allowed).isEqualTo(4);
        for (CompletableFuture<Decision> decision : others) {
            assertThat(decision.get(30, TimeUnit.SECONDS).remaining()).isEqualTo(4);
        }
        assertThat(count("unnest(")).isEqualTo(1);
        assertThat(count("decide(?")).isEqualTo(1);
        assertThat(limiter.peek("hot").remaining()).isZero();
    }

    @Test
    void keysThatArrayLiteralsQuoteAreEachTheirOwnKeyInABatch() throws Exception {
        JdbcThrottleStore store = store(1);
        Limiter limiter = store.limiter(BATCHED);
        List<String> keys = List.of(
                "NULL",
                "null",
                "a\"b",
                "a\\b",
                "{x,y}",
                "a,b",
                " spaced ",
                "",
                "ünï 鍵",
                "a\0b",
                "a\\0b",
                "\0",
                "'; DROP");
        CountDownLatch held = holdNextConnection();
        CompletableFuture<Decision> first = limiter.tryAcquireAsync("first", 1).toCompletableFuture();
        assertThat(this.asked.await(30, TimeUnit.SECONDS)).isTrue();
        List<CompletableFuture<Decision>> batch = new ArrayList<>();
        for (String key : keys) {
            batch.add(limiter.tryAcquireAsync(key, 1).toCompletableFuture());
        }
        // the same keys again, in the same batch: each key is charged twice, and only its own row
        for (String key : keys) {
            batch.add(limiter.tryAcquireAsync(key, 1).toCompletableFuture());
        }
        held.countDown();

        assertThat(first.get(30, TimeUnit.SECONDS).allowed()).isTrue();
        for (int i = 0; i < batch.size(); i++) {
            assertThat(batch.get(i).get(30, TimeUnit.SECONDS).remaining())
                    .as("call %d on key '%s'", i, keys.get(i % keys.size()))
                    .isEqualTo((i < keys.size()) ? 4 : 3);
        }
        assertThat(count("unnest(")).isEqualTo(1);
        for (String key : keys) {
            assertThat(limiter.peek(key).remaining()).as("key '%s'", key).isEqualTo(3);
        }
    }

    @Test
    void aCallTheDatabaseRefusesInABatchFailsAloneAndTheOthersAreDecided() throws Exception {
        JdbcCalls calls = callsOfOneConnection(Duration.ofSeconds(30));
        String limits = JdbcLimiter.limitsOf(BATCHED);
        CountDownLatch held = holdNextConnection();
        CompletableFuture<Decision> first = calls.decide(acquire("a", limits), JdbcLimiter::decision, "tryAcquire");
        assertThat(this.asked.await(30, TimeUnit.SECONDS)).isTrue();
        CompletableFuture<Decision> before = calls.decide(acquire("b", limits), JdbcLimiter::decision, "tryAcquire");
        // a receipt that is no number: the database refuses the cast, and with it the whole batch
        CompletableFuture<Decision> refused = calls.decide(
                new JdbcCalls.Decide("batched", "c", "token-bucket", limits, "r", 1, null, "{not-a-number}"),
                JdbcLimiter::decision,
                "refund");
        CompletableFuture<Decision> after = calls.decide(acquire("d", limits), JdbcLimiter::decision, "tryAcquire");
        held.countDown();

        assertThat(first.get(30, TimeUnit.SECONDS).remaining()).isEqualTo(4);
        assertThat(before.get(30, TimeUnit.SECONDS).remaining()).isEqualTo(4);
        assertThat(after.get(30, TimeUnit.SECONDS).remaining()).isEqualTo(4);
        assertThatThrownBy(() -> refused.get(30, TimeUnit.SECONDS))
                .hasCauseInstanceOf(JdbcStoreException.class)
                .hasMessageContaining("refund");
        assertThat(this.batchFailures)
                .singleElement()
                .satisfies((ex) -> assertThat(ex.getSQLState()).isEqualTo("22P02"));
        // the batch rolled back whole, then each call went alone: b and d were charged once
        Limiter limiter = new JdbcLimiter(
                calls, BATCHED, new RefusalMemory(10, 50, null), null, JdbcNearCacheSettings.disabled());
        assertThat(limiter.peek("b").remaining()).isEqualTo(4);
        assertThat(limiter.peek("d").remaining()).isEqualTo(4);
    }

    @Test
    void aCallWhoseCallerStoppedWaitingWhileQueuedIsNeverSent() throws Exception {
        JdbcCalls calls = callsOfOneConnection(Duration.ofSeconds(1));
        String limits = JdbcLimiter.limitsOf(BATCHED);
        CountDownLatch held = holdNextConnection();
        CompletableFuture<Decision> first = calls.decide(acquire("a", limits), JdbcLimiter::decision, "tryAcquire");
        assertThat(this.asked.await(30, TimeUnit.SECONDS)).isTrue();
        assertThatThrownBy(() -> calls.decideNow(acquire("gave-up", limits), JdbcLimiter::decision, "tryAcquire"))
                .isInstanceOf(JdbcStoreException.class)
                .hasMessageContaining("no answer within 1000ms");
        held.countDown();

        // the first call was on its way: its caller gave up too, but it is decided
        assertThatThrownBy(() -> first.get(30, TimeUnit.SECONDS)).hasMessageContaining("no answer within 1000ms");
        // a call queued now is taken after the one given up, which is so either dropped or sent by then
        assertThat(calls.decideNow(acquire("after", limits), JdbcLimiter::decision, "tryAcquire")
                        .remaining())
                .isEqualTo(4);
        Limiter limiter = new JdbcLimiter(
                calls, BATCHED, new RefusalMemory(10, 50, null), null, JdbcNearCacheSettings.disabled());
        assertThat(limiter.peek("a").remaining()).isEqualTo(4);
        assertThat(limiter.peek("gave-up").remaining()).isEqualTo(5);
        assertThat(count("unnest(")).isZero();
    }

    @Test
    void batchesOfTwoInstancesOnKeysInCommonNeverDeadlockAndStayExact() throws Exception {
        JdbcThrottleStore first = store(4);
        JdbcThrottleStore second = store(4);
        TokenBucketPolicy policy = TokenBucketPolicy.of("shared", 300, Duration.ofDays(1));
        Limiter[] limiters = {first.limiter(policy), second.limiter(policy)};
        int keys = 6;
        int threads = 32;
        int callsPerThread = 80;
        AtomicLong[] passes = new AtomicLong[keys];
        for (int k = 0; k < keys; k++) {
            passes[k] = new AtomicLong();
        }
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                Limiter limiter = limiters[t % 2];
                Random random = new Random(t);
                done.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < callsPerThread; i++) {
                        // every thread walks the keys in an order of its own
                        int key = random.nextInt(keys);
                        if (limiter.tryAcquire("key-" + key, 1).allowed()) {
                            passes[key].incrementAndGet();
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
        long total = 0;
        for (int k = 0; k < keys; k++) {
            assertThat(passes[k].get()).isLessThanOrEqualTo(300);
            total += passes[k].get();
        }
        // 2,560 calls on 6 keys of 300: most keys are spent, and each exactly
        assertThat(total).isEqualTo(keys * 300L);
        assertThat(count("unnest(")).isPositive();
        assertThat(this.batchFailures).isEmpty();
    }

    private JdbcCalls callsOfOneConnection(Duration timeout) {
        JdbcCalls calls = new JdbcCalls(pool(1), "throttle_", timeout, 1, null);
        this.closing.add(calls::close);
        return calls;
    }

    private CountDownLatch holdNextConnection() {
        CountDownLatch held = new CountDownLatch(1);
        this.asked = new CountDownLatch(1);
        this.nextConnection = held;
        return held;
    }

    private static JdbcCalls.Decide acquire(String key, String limits) {
        return new JdbcCalls.Decide("batched", key, "token-bucket", limits, "a", 1, null, null);
    }

    private long count(String sqlPart) {
        return this.statements.entrySet().stream()
                .filter((entry) -> entry.getKey().contains(sqlPart))
                .mapToLong((entry) -> entry.getValue().get())
                .sum();
    }

    private JdbcThrottleStore store(int maxConnections) {
        JdbcThrottleStore store = new JdbcThrottleStore(
                pool(maxConnections), "throttle_", Duration.ofSeconds(30), maxConnections, null, null, 0);
        this.closing.add(store);
        return store;
    }

    /** A pool whose statements are counted by their SQL, and whose batch statements' failures are kept. */
    private DataSource pool(int size) {
        HikariDataSource pool = SharedPostgres.newDataSource(size);
        this.closing.add(0, pool);
        return (DataSource) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
                    if (method.getName().equals("getConnection") && method.getParameterCount() == 0) {
                        CountDownLatch held = this.nextConnection;
                        this.nextConnection = new CountDownLatch(0);
                        this.asked.countDown();
                        held.await(30, TimeUnit.SECONDS);
                        return counting(pool.getConnection());
                    }
                    return invoke(pool, method, args);
                });
    }

    private Connection counting(Connection connection) {
        return (Connection) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                    Object result = invoke(connection, method, args);
                    if (method.getName().equals("prepareStatement")) {
                        String sql = (String) args[0];
                        this.statements
                                .computeIfAbsent(sql, (s) -> new AtomicInteger())
                                .incrementAndGet();
                        return watching((PreparedStatement) result, sql.contains("unnest("));
                    }
                    return result;
                });
    }

    private PreparedStatement watching(PreparedStatement statement, boolean batch) {
        return (PreparedStatement) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {PreparedStatement.class}, (proxy, method, args) -> {
                    try {
                        return invoke(statement, method, args);
                    } catch (SQLException ex) {
                        if (batch) {
                            this.batchFailures.add(ex);
                        }
                        throw ex;
                    }
                });
    }

    private static Object invoke(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException ex) {
            throw ex.getCause();
        }
    }
}
