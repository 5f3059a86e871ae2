package dev.throttle.spring.jdbc;

import dev.throttle.TimeSource;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * How the store talks to the database: every call runs on one of the store's own threads, at most
 * {@code maxConnections} of them, each holding one connection of the application's pool for the
 * length of one call; so throttle never holds more than {@code maxConnections} of the pool's
 * connections, whatever the traffic. Decisions that wait for a connection at the same moment leave
 * together ({@link #decide}): one statement, one transaction and so one commit for all of them. A caller waits for its call at most the timeout: a call still
 * queued by then is dropped unsent, and one already sent is cancelled by the driver's query timeout
 * (the timeout rounded up to whole seconds, JDBC's unit). A call that cannot even be queued (every
 * connection busy and {@link #QUEUE_CAPACITY} calls waiting) fails at once as a timeout would.
 *
 * <p>Failures are {@link JdbcStoreException}s; a timeout, a full queue and a statement cancelled by
 * its timeout carry a {@link TimeoutException} among their causes, as the failure policy
 * ({@link dev.throttle.resilience.ResilientThrottleStore}) tells timeouts from errors. Thread-safe.
 */
final class JdbcCalls {

    static final String KIND = "jdbc";

    /** Calls waiting for a connection, at most: beyond them a call fails at once. */
    static final int QUEUE_CAPACITY = 1024;

    /** The most decisions one statement carries. */
    static final int MAX_BATCH = 32;

    /** PostgreSQL's SQLSTATE for a statement cancelled (here: by its query timeout). */
    private static final String QUERY_CANCELED = "57014";

    /**
     * The order in which a batch's decisions run: by policy and key, the same in every batch of
     * every instance, so that two batches that lock rows in common lock them in one order and never
     * wait for each other in a circle.
     */
    private static final Comparator<Pending<?>> LOCK_ORDER = Comparator.comparing(
                    (Pending<?> pending) -> pending.call.policy())
            .thenComparing((pending) -> pending.call.key());

    private final DataSource dataSource;

    private final String tablePrefix;

    private final Duration timeout;

    private final long timeoutNanos;

    private final int queryTimeoutSeconds;

    private final int maxConnections;

    private final @Nullable TimeSource clock;

    private final ThreadPoolExecutor executor;

    /** Decisions waiting for one of the store's threads. */
    private final ConcurrentLinkedQueue<Pending<?>> decisions = new ConcurrentLinkedQueue<>();

    /** How many calls {@link #decisions} holds, bounded by {@link #QUEUE_CAPACITY}. */
    private final AtomicInteger waiting = new AtomicInteger();

    /** How many of the store's threads decide waiting calls, or are queued to. */
    private final AtomicInteger deciding = new AtomicInteger();

    private final String decideSql;

    private final String batchSql;

    /** One call on a connection; the connection is the caller's to use, not to close. */
    @FunctionalInterface
    interface Work<T> {
        T run(Connection connection) throws SQLException;
    }

    /** What a caller makes of the decide function's numbers. */
    @FunctionalInterface
    interface Reply<T> {
        T of(Object[] numbers) throws SQLException;
    }

    /**
     * One call of {@code <prefix>decide(...)}: the policy's name, the key as stored, the algorithm,
     * the limits' numbers and the receipts as PostgreSQL array literals, and the application's time
     * or null for the database's.
     */
    record Decide(
            String policy,
            String key,
            String algorithm,
            String limits,
            String operation,
            long cost,
            @Nullable Long now,
            @Nullable String receipts) {}

    /**
     * A call waiting for one of the store's threads; {@code finished}, when given, runs once the
     * call's statement has ended (committed, failed, or never sent), whether or not its caller still
     * waits: what must follow the database's change rather than the caller's answer.
     */
    private record Pending<T>(
            Decide call,
            Reply<T> reply,
            CompletableFuture<T> result,
            @Nullable Runnable finished) {

        void finish() {
            if (this.finished != null) {
                try {
                    this.finished.run();
                } catch (Throwable ex) {
                    // what follows a call never fails the calls beside it
                }
            }
        }

        void answer(Object[] numbers) {
            try {
                this.result.complete(this.reply.of(numbers));
            } catch (Throwable ex) {
                this.result.completeExceptionally(ex);
            }
        }
    }

    JdbcCalls(
            DataSource dataSource,
            String tablePrefix,
            Duration timeout,
            int maxConnections,
            @Nullable TimeSource clock) {
        this.dataSource = dataSource;
        this.tablePrefix = tablePrefix;
        this.timeout = timeout;
        this.timeoutNanos = timeout.toNanos();
        this.queryTimeoutSeconds = (int) Math.max(1, (timeout.toMillis() + 999) / 1000);
        this.maxConnections = maxConnections;
        this.clock = clock;
        this.executor = new ThreadPoolExecutor(
                maxConnections,
                maxConnections,
                60,
                TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(QUEUE_CAPACITY),
                new Threads());
        this.executor.allowCoreThreadTimeOut(true);
        this.decideSql = "SELECT " + tablePrefix + "decide(?, ?, ?, ?::bigint[], ?, ?, ?, ?::bigint[])";
        // unnest reads the arrays in order and the function runs once per row, in that order, each
        // call seeing what the ones before it wrote (a volatile function's statements do)
        this.batchSql =
                "SELECT d.i, " + tablePrefix + "decide(d.p, d.k, d.a, d.l::bigint[], d.o, d.c, d.n, d.r::bigint[])"
                        + " FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::text[])"
                        + " WITH ORDINALITY AS d(p, k, a, l, o, c, n, r, i)";
    }

    String tablePrefix() {
        return this.tablePrefix;
    }

    Duration timeout() {
        return this.timeout;
    }

    int maxConnections() {
        return this.maxConnections;
    }

    int queryTimeoutSeconds() {
        return this.queryTimeoutSeconds;
    }

    /**
     * The application's time: the clock given, else the system's. Only a calendar window reads it, to
     * send the boundaries around it; the database decides on its own clock.
     */
    long applicationTime() {
        TimeSource clock = this.clock;
        return (clock != null) ? clock.currentTimeMillis() : TimeSource.system().currentTimeMillis();
    }

    /** The time to pass to the database, or null for its own clock. */
    @Nullable
    Long now() {
        return (this.clock != null) ? this.clock.currentTimeMillis() : null;
    }

    /**
     * Runs {@code work} on a connection of the store's own, bounded by the timeout.
     * @return its result, or a failure ({@link JdbcStoreException}) once the timeout has passed
     */
    <T> CompletableFuture<T> bounded(Work<T> work, String operation, String policy) {
        return boundedResult(submit(work, operation, policy), operation, policy);
    }

    /** The call's result, or its failure ({@link JdbcStoreException}), at most the timeout later. */
    private <T> CompletableFuture<T> boundedResult(CompletableFuture<T> call, String operation, String policy) {
        CompletableFuture<T> answer = new CompletableFuture<>();
        call.orTimeout(this.timeoutNanos, TimeUnit.NANOSECONDS).whenComplete((value, ex) -> {
            if (ex == null) {
                answer.complete(value);
            } else {
                answer.completeExceptionally(failure(operation, policy, ex));
            }
        });
        return answer;
    }

    /**
     * Runs {@code work} on a connection of the store's own and waits for it at most the timeout.
     * @throws JdbcStoreException when it failed or did not answer in time
     */
    <T> T await(Work<T> work, String operation, String policy) {
        return awaitResult(submit(work, operation, policy), operation, policy);
    }

    private <T> T awaitResult(CompletableFuture<T> call, String operation, String policy) {
        try {
            return call.get(this.timeoutNanos, TimeUnit.NANOSECONDS);
        } catch (ExecutionException ex) {
            throw failure(operation, policy, ex.getCause());
        } catch (TimeoutException ex) {
            // a call still queued sees this and is never sent
            call.completeExceptionally(ex);
            throw failure(operation, policy, ex);
        } catch (InterruptedException ex) {
            call.completeExceptionally(ex);
            Thread.currentThread().interrupt();
            throw failure(operation, policy, ex);
        }
    }

    /**
     * One call of the decide function, bounded by the timeout like {@link #bounded}. Calls that wait
     * for one of the store's threads at the same moment are decided in one statement and one
     * transaction, in the order of their policies and keys: the database flushes one commit for all
     * of them instead of one each. A caller alone waits for nothing more than before; its call is a
     * statement of its own.
     * @return the caller's reply, or a failure ({@link JdbcStoreException}) once the timeout has passed
     */
    <T> CompletableFuture<T> decide(Decide call, Reply<T> reply, String operation) {
        return decide(call, reply, operation, null);
    }

    /**
     * {@link #decide}, with {@code finished} run once the call's statement has ended (or the call was
     * dropped unsent), however long after its caller stopped waiting.
     */
    <T> CompletableFuture<T> decide(Decide call, Reply<T> reply, String operation, @Nullable Runnable finished) {
        return boundedResult(enqueue(call, reply, finished), operation, call.policy());
    }

    /**
     * {@link #decide}, waited for at most the timeout.
     * @throws JdbcStoreException when it failed or did not answer in time
     */
    <T> T decideNow(Decide call, Reply<T> reply, String operation) {
        return decideNow(call, reply, operation, null);
    }

    /** {@link #decideNow}, with {@code finished} as in {@link #decide(Decide, Reply, String, Runnable)}. */
    <T> T decideNow(Decide call, Reply<T> reply, String operation, @Nullable Runnable finished) {
        return awaitResult(enqueue(call, reply, finished), operation, call.policy());
    }

    private <T> CompletableFuture<T> enqueue(Decide call, Reply<T> reply, @Nullable Runnable finished) {
        Pending<T> pending = new Pending<>(call, reply, new CompletableFuture<>(), finished);
        if (this.waiting.incrementAndGet() > QUEUE_CAPACITY) {
            this.waiting.decrementAndGet();
            pending.result.completeExceptionally(busy(null));
            pending.finish();
            return pending.result;
        }
        this.decisions.add(pending);
        startDeciding();
        return pending.result;
    }

    /**
     * Puts one more of the store's threads to deciding the waiting calls, unless every one of them
     * already is: a thread that finishes a batch takes the calls that queued meanwhile.
     */
    private void startDeciding() {
        int running;
        do {
            running = this.deciding.get();
            if (running >= this.maxConnections) {
                return;
            }
        } while (!this.deciding.compareAndSet(running, running + 1));
        try {
            this.executor.execute(this::decideWaiting);
        } catch (RejectedExecutionException ex) {
            // the store closed, or its threads' queue full of other work: the calls waiting are taken
            // by the next call's try, or fail as their callers stop waiting
            this.deciding.decrementAndGet();
        }
    }

    /**
     * Decides the calls waiting now (at most {@link #MAX_BATCH}) together, then queues itself again
     * while calls wait, behind the other work on the store's threads (a reset, the purge), which so
     * takes its turn under any load.
     */
    private void decideWaiting() {
        List<Pending<?>> batch = new ArrayList<>();
        Pending<?> pending;
        while (batch.size() < MAX_BATCH && (pending = this.decisions.poll()) != null) {
            this.waiting.decrementAndGet();
            // a caller that stopped waiting while it was queued is never sent
            if (!pending.result.isDone()) {
                batch.add(pending);
            } else {
                pending.finish();
            }
        }
        try {
            decide(batch);
        } finally {
            batch.forEach(Pending::finish);
            if (!this.decisions.isEmpty()) {
                try {
                    this.executor.execute(this::decideWaiting);
                } catch (RejectedExecutionException ex) {
                    this.deciding.decrementAndGet();
                }
            } else {
                this.deciding.decrementAndGet();
                // a call queued after the poll above, whose caller found every thread deciding
                if (!this.decisions.isEmpty()) {
                    startDeciding();
                }
            }
        }
    }

    private void decide(List<Pending<?>> batch) {
        if (batch.isEmpty()) {
            return;
        }
        if (batch.size() == 1) {
            decideAlone(batch.get(0));
            return;
        }
        batch.sort(LOCK_ORDER);
        Object[][] replies;
        try {
            // answered once the transaction is committed, never before
            replies = run((connection) -> decideTogether(connection, batch));
        } catch (SQLException ex) {
            if (!decidedAloneAfter(ex)) {
                batch.forEach((failed) -> failed.result.completeExceptionally(ex));
                return;
            }
            // the batch's transaction rolled back whole: each call decided alone fails alone, or not
            batch.forEach(this::decideAlone);
            return;
        } catch (Throwable ex) {
            batch.forEach((failed) -> failed.result.completeExceptionally(ex));
            return;
        }
        for (int i = 0; i < replies.length; i++) {
            batch.get(i).answer(replies[i]);
        }
    }

    /**
     * Whether a batch that failed is decided again one call at a time: when the database refused a
     * statement (an error raised by a call, a deadlock, bad data), not when it did not answer (a
     * connection lost, a query cancelled by its timeout, no resources), where each would fail too.
     */
    private static boolean decidedAloneAfter(SQLException ex) {
        String state = ex.getSQLState();
        return state != null
                && !state.startsWith("08")
                && !state.startsWith("53")
                && !state.startsWith("57")
                && !state.startsWith("58");
    }

    private <T> void decideAlone(Pending<T> pending) {
        if (pending.result.isDone()) {
            return;
        }
        try {
            pending.answer(run((connection) -> decideOne(connection, pending.call)));
        } catch (Throwable ex) {
            pending.result.completeExceptionally(ex);
        }
    }

    private Object[] decideOne(Connection connection, Decide call) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(this.decideSql)) {
            statement.setQueryTimeout(this.queryTimeoutSeconds);
            statement.setString(1, call.policy());
            statement.setString(2, call.key());
            statement.setString(3, call.algorithm());
            statement.setString(4, call.limits());
            statement.setString(5, call.operation());
            statement.setLong(6, call.cost());
            if (call.now() != null) {
                statement.setLong(7, call.now());
            } else {
                statement.setNull(7, java.sql.Types.BIGINT);
            }
            statement.setString(8, call.receipts());
            try (ResultSet result = statement.executeQuery()) {
                if (!result.next()) {
                    throw new SQLException("no row from " + this.decideSql);
                }
                return numbers(result.getArray(1));
            }
        }
    }

    private Object[][] decideTogether(Connection connection, List<Pending<?>> batch) throws SQLException {
        int size = batch.size();
        String[] policies = new String[size];
        String[] keys = new String[size];
        String[] algorithms = new String[size];
        String[] limits = new String[size];
        String[] operations = new String[size];
        Long[] costs = new Long[size];
        Long[] nows = new Long[size];
        String[] receipts = new String[size];
        for (int i = 0; i < size; i++) {
            Decide call = batch.get(i).call;
            policies[i] = call.policy();
            keys[i] = call.key();
            algorithms[i] = call.algorithm();
            limits[i] = call.limits();
            operations[i] = call.operation();
            costs[i] = call.cost();
            nows[i] = call.now();
            receipts[i] = call.receipts();
        }
        Object[][] replies = new Object[size][];
        try (PreparedStatement statement = connection.prepareStatement(this.batchSql)) {
            statement.setQueryTimeout(this.queryTimeoutSeconds);
            statement.setArray(1, connection.createArrayOf("text", policies));
            statement.setArray(2, connection.createArrayOf("text", keys));
            statement.setArray(3, connection.createArrayOf("text", algorithms));
            statement.setArray(4, connection.createArrayOf("text", limits));
            statement.setArray(5, connection.createArrayOf("text", operations));
            statement.setArray(6, connection.createArrayOf("int8", costs));
            statement.setArray(7, connection.createArrayOf("int8", nows));
            statement.setArray(8, connection.createArrayOf("text", receipts));
            try (ResultSet result = statement.executeQuery()) {
                while (result.next()) {
                    int at = (int) result.getLong(1) - 1;
                    if (at < 0 || at >= size || replies[at] != null) {
                        throw new SQLException("unexpected row " + (at + 1) + " from a batch of " + size);
                    }
                    replies[at] = numbers(result.getArray(2));
                }
            }
        }
        for (int i = 0; i < size; i++) {
            if (replies[i] == null) {
                throw new SQLException("no row " + (i + 1) + " from a batch of " + size);
            }
        }
        return replies;
    }

    private static Object[] numbers(@Nullable Array array) throws SQLException {
        return (array != null) ? (Object[]) array.getArray() : new Object[0];
    }

    private <T> CompletableFuture<T> submit(Work<T> work, String operation, String policy) {
        CompletableFuture<T> result = new CompletableFuture<>();
        try {
            this.executor.execute(() -> {
                if (result.isDone()) {
                    // its caller stopped waiting while it was queued
                    return;
                }
                try {
                    result.complete(run(work));
                } catch (Throwable ex) {
                    result.completeExceptionally(ex);
                }
            });
        } catch (RejectedExecutionException ex) {
            result.completeExceptionally(busy(ex));
        }
        return result;
    }

    private TimeoutException busy(RejectedExecutionException ex) {
        TimeoutException busy = new TimeoutException("all " + this.maxConnections
                + " connections of the store busy and " + QUEUE_CAPACITY + " calls waiting");
        busy.initCause(ex);
        return busy;
    }

    /** Runs work on a connection of the pool, in a transaction of its own. */
    private <T> T run(Work<T> work) throws SQLException {
        try (Connection connection = this.dataSource.getConnection()) {
            if (connection.getAutoCommit()) {
                return work.run(connection);
            }
            // a pool that hands out connections without auto-commit: commit each call, as its own
            try {
                T value = work.run(connection);
                connection.commit();
                return value;
            } catch (SQLException | RuntimeException ex) {
                try {
                    connection.rollback();
                } catch (SQLException rollback) {
                    ex.addSuppressed(rollback);
                }
                throw ex;
            }
        }
    }

    /**
     * Runs {@code work} on the store's threads without waiting for it: the schedule of the purge,
     * whose batches take their turn among the decisions rather than a connection more.
     */
    void runLater(Work<?> work, Runnable onFailure) {
        try {
            this.executor.execute(() -> {
                try {
                    run(work);
                } catch (Throwable ex) {
                    onFailure.run();
                }
            });
        } catch (RejectedExecutionException ex) {
            onFailure.run();
        }
    }

    private JdbcStoreException failure(String operation, String policy, @Nullable Throwable ex) {
        Throwable cause = unwrap(ex);
        if (cause instanceof JdbcStoreException failure) {
            return failure;
        }
        String reason;
        if (cause instanceof TimeoutException) {
            reason = (cause.getMessage() != null)
                    ? cause.getMessage()
                    : "no answer within " + this.timeout.toMillis() + "ms";
        } else if (cause instanceof SQLException sql && QUERY_CANCELED.equals(sql.getSQLState())) {
            reason = "no answer within " + this.queryTimeoutSeconds + "s (query timeout)";
            TimeoutException timedOut = new TimeoutException(reason);
            timedOut.initCause(sql);
            cause = timedOut;
        } else {
            reason = String.valueOf((cause != null) ? cause.getMessage() : null);
        }
        return new JdbcStoreException(
                "Database " + operation + " for throttle policy '" + policy + "' failed: " + reason, cause);
    }

    private static @Nullable Throwable unwrap(@Nullable Throwable ex) {
        Throwable cause = ex;
        while ((cause instanceof java.util.concurrent.CompletionException || cause instanceof ExecutionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause;
    }

    /** Stops the store's threads; calls still queued fail as the store's callers stop waiting. */
    void close() {
        this.executor.shutdownNow();
    }

    /** Daemon threads named {@code throttle-jdbc-<n>}. */
    private static final class Threads implements ThreadFactory {

        private static final AtomicInteger STORES = new AtomicInteger();

        private final int store = STORES.incrementAndGet();

        private final AtomicInteger count = new AtomicInteger();

        @Override
        public Thread newThread(Runnable task) {
            Thread thread = new Thread(task, "throttle-jdbc-" + this.store + "-" + this.count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        }
    }
}
