package dev.throttle.spring.jdbc;

import dev.throttle.TimeSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
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
 * connections, whatever the traffic. A caller waits for its call at most the timeout: a call still
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

    /** PostgreSQL's SQLSTATE for a statement cancelled (here: by its query timeout). */
    private static final String QUERY_CANCELED = "57014";

    private final DataSource dataSource;

    private final String tablePrefix;

    private final Duration timeout;

    private final long timeoutNanos;

    private final int queryTimeoutSeconds;

    private final int maxConnections;

    private final @Nullable TimeSource clock;

    private final ThreadPoolExecutor executor;

    /** One call on a connection; the connection is the caller's to use, not to close. */
    @FunctionalInterface
    interface Work<T> {
        T run(Connection connection) throws SQLException;
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
        CompletableFuture<T> call = submit(work, operation, policy);
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
        CompletableFuture<T> call = submit(work, operation, policy);
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
            TimeoutException busy = new TimeoutException("all " + this.maxConnections
                    + " connections of the store busy and " + QUEUE_CAPACITY + " calls waiting");
            busy.initCause(ex);
            result.completeExceptionally(busy);
        }
        return result;
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
