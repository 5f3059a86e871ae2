package dev.throttle.spring.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * The near cache's invalidations between the instances that share a database: a key reset or given
 * back, or a policy changed, is published with {@code pg_notify} on {@code <prefix>events} once the
 * database has the change, and heard by every instance on a connection of its own that
 * {@code LISTEN}s (one connection of the application's pool, held for as long as the store runs).
 *
 * <p>An instance answers from its near cache only while it knows it hears ({@link #hears()}): a
 * connection that accepts {@code LISTEN} may still deliver nothing (a pooler in transaction mode hands
 * the session to others; a network path dropped without a word leaves reads waiting), so hearing is
 * proven, not assumed. On a new connection the listener sends an event to itself and waits for it
 * before it answers; afterwards each event heard proves delivery, and one sent to itself after every
 * {@link #PROOF_INTERVAL_NANOS} of quiet must come back within {@link #PROOF_WAIT_NANOS}. Without a
 * recent proof the instance asks the database, and when the connection is given up it forgets every
 * refusal (events may be missed until it listens again) and tries a new one every second.
 *
 * <p>A payload names its sender, the policy and the key, the names in Base64 so that no name or key can
 * be read as another; one it cannot read forgets everything. An instance hears its own events too: a
 * reset whose caller stopped waiting before it was committed forgets the key here once it is, after
 * any refusal a decision made meanwhile remembered. Thread-safe.
 */
final class JdbcEvents {

    private static final Log logger = LogFactory.getLog(JdbcEvents.class);

    /** The longest one wait for notifications blocks, so that a close is seen soon. */
    private static final int WAIT_MILLIS = 250;

    /** How long the listener goes without an event before it sends one to itself. */
    static final long PROOF_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(5);

    /** How long an event sent to itself may take to come back before the connection is given up. */
    static final long PROOF_WAIT_NANOS = TimeUnit.SECONDS.toNanos(3);

    /** How long after a lost connection the next one is tried. */
    private static final long RETRY_MILLIS = 1000;

    /** The longest a read on the listening connection blocks before the connection counts as lost. */
    private static final int NETWORK_TIMEOUT_MILLIS = 10_000;

    /** What an event makes this instance forget. */
    interface Target {

        void forget(String policy, String key);

        void forgetPolicy(String policy);

        void forgetAll();
    }

    private final DataSource dataSource;

    private final String channel;

    private final Target target;

    private final JdbcCalls calls;

    /** This instance's name in its events, for whoever reads the channel. */
    private final String sender = UUID.randomUUID().toString().substring(0, 8);

    private final Thread listener;

    private final CompletableFuture<Void> heard = new CompletableFuture<>();

    /** When delivery on the listening connection was last proven ({@link System#nanoTime()}). */
    private volatile long provenAt;

    private volatile boolean hearing;

    private volatile boolean closed;

    /** The proof the listener waits for, touched only by the listener's thread. */
    private @Nullable String awaitedProof;

    JdbcEvents(DataSource dataSource, JdbcCalls calls, Target target) {
        this.dataSource = dataSource;
        this.calls = calls;
        this.target = target;
        this.channel = JdbcEventPayloads.channelOf(calls.tablePrefix());
        this.listener = new Thread(this::listen, "throttle-jdbc-events");
        this.listener.setDaemon(true);
    }

    void start() {
        this.listener.start();
    }

    /**
     * Whether this instance hears the events now: it listens, and delivery was proven recently. Only
     * then does it answer from its near cache.
     */
    boolean hears() {
        return this.hearing
                && System.nanoTime() - this.provenAt < PROOF_INTERVAL_NANOS + PROOF_WAIT_NANOS + PROOF_WAIT_NANOS;
    }

    /** Completed once this instance first hears (tests and benchmarks wait for it). */
    CompletableFuture<Void> heard() {
        return this.heard;
    }

    /** This instance's name in the events it publishes. */
    String sender() {
        return this.sender;
    }

    /** Publishes that {@code key} of {@code policy} was given back. */
    CompletableFuture<Void> publishKey(String policy, String key) {
        return publish(JdbcEventPayloads.keyChanged(this.sender, policy, key), policy, "publishRefund");
    }

    /** Publishes that {@code policy} changed. */
    CompletableFuture<Void> publishPolicy(String policy) {
        return publish(JdbcEventPayloads.policyChanged(this.sender, policy), policy, "publishPolicyChange");
    }

    private CompletableFuture<Void> publish(String payload, String policy, String operation) {
        CompletableFuture<Void> published = this.calls.bounded(
                (connection) -> {
                    notify(connection, payload);
                    return null;
                },
                operation,
                policy);
        published.whenComplete((done, ex) -> {
            if (ex != null) {
                logger.debug(
                        "throttle: an event of the jdbc store was not published; other instances' refusals of "
                                + "policy '" + policy + "' end at their Retry-After",
                        ex);
            }
        });
        return published;
    }

    private void notify(Connection connection, String payload) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement("SELECT pg_notify(?, ?)")) {
            statement.setQueryTimeout(this.calls.queryTimeoutSeconds());
            statement.setString(1, this.channel);
            statement.setString(2, payload);
            statement.execute();
        }
    }

    /** What one payload makes this instance forget; one it cannot read forgets everything. */
    void apply(@Nullable String payload) {
        try {
            String[] parts = (payload != null) ? payload.split(" ", -1) : new String[0];
            if (parts.length == 2 && parts[0].equals("h")) {
                // a proof of delivery: the listener's own, or another instance's to ignore
                if (parts[1].equals(this.awaitedProof)) {
                    this.awaitedProof = null;
                }
                return;
            }
            if (parts.length == 4 && parts[0].equals("k")) {
                this.target.forget(JdbcEventPayloads.decode(parts[2]), JdbcEventPayloads.decode(parts[3]));
                return;
            }
            if (parts.length == 3 && parts[0].equals("p")) {
                this.target.forgetPolicy(JdbcEventPayloads.decode(parts[2]));
                return;
            }
        } catch (IllegalArgumentException ex) {
            // not Base64: read as unreadable below
        }
        this.target.forgetAll();
    }

    private void listen() {
        boolean lost = false;
        try {
            while (!this.closed) {
                Connection connection;
                try {
                    connection = this.dataSource.getConnection();
                } catch (SQLException | RuntimeException ex) {
                    lost = lose(lost, ex);
                    continue;
                }
                boolean reusable = false;
                try {
                    if (!connection.isWrapperFor(PGConnection.class)) {
                        logger.warn("throttle: the data source's connections are not the PostgreSQL driver's "
                                + "(org.postgresql); the jdbc store's near cache answers nothing, every decision asks "
                                + "the database");
                        reusable = true;
                        return;
                    }
                    PGConnection postgres = connection.unwrap(PGConnection.class);
                    if (!connection.getAutoCommit()) {
                        // LISTEN takes effect when its transaction commits
                        connection.setAutoCommit(true);
                    }
                    connection.setNetworkTimeout(Runnable::run, NETWORK_TIMEOUT_MILLIS);
                    try (Statement statement = connection.createStatement()) {
                        statement.execute("LISTEN " + this.channel);
                    }
                    awaitProof(connection, postgres);
                    // events published before the proof may not have been heard
                    this.target.forgetAll();
                    this.hearing = true;
                    this.heard.complete(null);
                    if (lost) {
                        logger.info("throttle: hearing the jdbc store's events again; the near cache answers again");
                        lost = false;
                    }
                    hearOn(connection, postgres);
                    // closed: the session goes back to the pool without its LISTEN
                    try (Statement statement = connection.createStatement()) {
                        statement.execute("UNLISTEN *");
                    }
                    reusable = true;
                } catch (SQLException | RuntimeException ex) {
                    if (!this.closed) {
                        lost = lose(lost, ex);
                    }
                } finally {
                    giveBack(connection, reusable);
                }
            }
        } finally {
            // whatever ended the listener (a close, an Error), nothing is answered from what it cannot keep true
            this.hearing = false;
            this.target.forgetAll();
        }
    }

    /** Stops answering, forgets everything, logs the first loss, and waits before the next try. */
    private boolean lose(boolean lost, Throwable ex) {
        this.hearing = false;
        this.target.forgetAll();
        if (!lost) {
            logger.warn("throttle: the jdbc store's events (LISTEN " + this.channel + ") cannot be heard ("
                    + ex.getMessage() + "); every decision asks the database until they are, tried every "
                    + RETRY_MILLIS + " ms");
        }
        try {
            Thread.sleep(RETRY_MILLIS);
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            this.closed = true;
        }
        return true;
    }

    /**
     * Returns the connection to the pool when its session is clean (no LISTEN left); otherwise aborts
     * it, so that the pool drops it rather than lend a session that collects every event of the fleet.
     */
    private static void giveBack(Connection connection, boolean reusable) {
        if (!reusable) {
            try {
                connection.abort(Runnable::run);
            } catch (SQLException | RuntimeException ex) {
                // closed below either way
            }
        }
        try {
            connection.close();
        } catch (SQLException | RuntimeException ex) {
            // aborted or lost already
        }
    }

    /** Sends an event to this connection itself and waits until it comes back. */
    private void awaitProof(Connection connection, PGConnection postgres) throws SQLException {
        String proof = UUID.randomUUID().toString();
        this.awaitedProof = proof;
        notify(connection, "h " + proof);
        long sentAt = System.nanoTime();
        while (this.awaitedProof != null && !this.closed) {
            if (System.nanoTime() - sentAt > PROOF_WAIT_NANOS) {
                throw new SQLException("an event sent on the listening connection did not come back within "
                        + TimeUnit.NANOSECONDS.toMillis(PROOF_WAIT_NANOS) + " ms (a pooler in transaction mode "
                        + "does not keep LISTEN)");
            }
            deliver(postgres);
        }
        if (this.awaitedProof != null) {
            // closed while waiting: nothing was proven
            throw new SQLException("closed");
        }
        this.provenAt = System.nanoTime();
    }

    /** Applies what arrives within one wait; any event proves delivery. */
    private boolean deliver(PGConnection postgres) throws SQLException {
        PGNotification[] notifications = postgres.getNotifications(WAIT_MILLIS);
        if (notifications == null || notifications.length == 0) {
            return false;
        }
        for (PGNotification notification : notifications) {
            apply(notification.getParameter());
        }
        return true;
    }

    private void hearOn(Connection connection, PGConnection postgres) throws SQLException {
        while (!this.closed) {
            if (deliver(postgres) && this.awaitedProof == null) {
                this.provenAt = System.nanoTime();
            } else if (System.nanoTime() - this.provenAt > PROOF_INTERVAL_NANOS) {
                awaitProof(connection, postgres);
            }
        }
    }

    /** Stops listening: the listener gives its connection back (or drops it) within a wait or so. */
    void close() {
        this.closed = true;
        this.hearing = false;
        this.listener.interrupt();
        try {
            this.listener.join(TimeUnit.SECONDS.toMillis(2));
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }
}
