package dev.throttle.spring.jdbc;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Base64;
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
 * <p>An instance answers from its near cache only while it hears ({@link #hears()}): when the
 * listening connection is lost it stops at once, forgets every refusal (events may be missed until it
 * listens again) and tries again every second; a quiet connection is checked every few seconds, so
 * one that died without a word is found. A payload names the policy and the key in Base64, so that no
 * name or key can be read as another; one that cannot be read forgets everything. Thread-safe.
 */
final class JdbcEvents {

    private static final Log logger = LogFactory.getLog(JdbcEvents.class);

    /** The longest one wait for notifications blocks, so that a close is seen soon. */
    private static final int WAIT_MILLIS = 250;

    /** How long a connection that brought nothing goes before it is checked with a query. */
    private static final long QUIET_CHECK_NANOS = TimeUnit.SECONDS.toNanos(5);

    /** How long after a lost connection the next one is tried. */
    private static final long RETRY_MILLIS = 1000;

    /** PostgreSQL refuses a payload of 8000 bytes or more; a longer key's event forgets its whole policy. */
    private static final int MAXIMUM_PAYLOAD = 7900;

    private static final Base64.Encoder ENCODER = Base64.getUrlEncoder().withoutPadding();

    private static final Base64.Decoder DECODER = Base64.getUrlDecoder();

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

    private final String notifySql = "SELECT pg_notify(?, ?)";

    private final Thread listener;

    private final CompletableFuture<Void> heard = new CompletableFuture<>();

    private volatile boolean hearing;

    private volatile boolean closed;

    private volatile @Nullable Connection listening;

    JdbcEvents(DataSource dataSource, JdbcCalls calls, Target target) {
        this.dataSource = dataSource;
        this.calls = calls;
        this.target = target;
        this.channel = calls.tablePrefix() + "events";
        this.listener = new Thread(this::listen, "throttle-jdbc-events");
        this.listener.setDaemon(true);
    }

    void start() {
        this.listener.start();
    }

    /** Whether this instance hears the events now: only then does it answer from its near cache. */
    boolean hears() {
        return this.hearing;
    }

    /** Completed once this instance first listens (tests and the warm-up wait for it). */
    CompletableFuture<Void> heard() {
        return this.heard;
    }

    /** Publishes that {@code key} of {@code policy} was given back. */
    CompletableFuture<Void> publishKey(String policy, String key) {
        return publish(keyPayload(policy, key), policy, "publishRefund");
    }

    /** The channel, for a statement that publishes beside its change. */
    String channel() {
        return this.channel;
    }

    /** The event that {@code key} of {@code policy} changed (its whole policy, for a key too long to name). */
    String keyPayload(String policy, String key) {
        String payload = "k " + encode(policy) + " " + encode(key);
        return (payload.length() <= MAXIMUM_PAYLOAD) ? payload : "p " + encode(policy);
    }

    /** Publishes that {@code policy} changed. */
    CompletableFuture<Void> publishPolicy(String policy) {
        return publish("p " + encode(policy), policy, "publishPolicyChange");
    }

    private CompletableFuture<Void> publish(String payload, String policy, String operation) {
        return this.calls.bounded(
                (connection) -> {
                    try (PreparedStatement statement = connection.prepareStatement(this.notifySql)) {
                        statement.setQueryTimeout(this.calls.queryTimeoutSeconds());
                        statement.setString(1, this.channel);
                        statement.setString(2, payload);
                        statement.execute();
                    }
                    return null;
                },
                operation,
                policy);
    }

    private static String encode(String text) {
        return ENCODER.encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }

    private static String decode(String text) {
        return new String(DECODER.decode(text), StandardCharsets.UTF_8);
    }

    /** What one payload makes this instance forget; one it cannot read forgets everything. */
    void apply(@Nullable String payload) {
        try {
            String[] parts = (payload != null) ? payload.split(" ", -1) : new String[0];
            if (parts.length == 3 && parts[0].equals("k")) {
                this.target.forget(decode(parts[1]), decode(parts[2]));
                return;
            }
            if (parts.length == 2 && parts[0].equals("p")) {
                this.target.forgetPolicy(decode(parts[1]));
                return;
            }
        } catch (IllegalArgumentException ex) {
            // not Base64: read as unreadable below
        }
        this.target.forgetAll();
    }

    private void listen() {
        boolean lost = false;
        while (!this.closed) {
            try (Connection connection = this.dataSource.getConnection()) {
                this.listening = connection;
                if (!connection.isWrapperFor(PGConnection.class)) {
                    logger.warn(
                            "throttle: the data source's connections are not the PostgreSQL driver's (org.postgresql);"
                                    + " the jdbc store's near cache answers nothing, every decision asks the database");
                    break;
                }
                PGConnection postgres = connection.unwrap(PGConnection.class);
                if (!connection.getAutoCommit()) {
                    // LISTEN takes effect when its transaction commits
                    connection.setAutoCommit(true);
                }
                try (Statement statement = connection.createStatement()) {
                    statement.execute("LISTEN " + this.channel);
                }
                // events published before this point were not heard
                this.target.forgetAll();
                this.hearing = true;
                this.heard.complete(null);
                if (lost) {
                    logger.info("throttle: hearing the jdbc store's events again; the near cache answers again");
                    lost = false;
                }
                hearOn(connection, postgres);
            } catch (SQLException | RuntimeException ex) {
                if (this.closed) {
                    break;
                }
                this.hearing = false;
                this.target.forgetAll();
                if (!lost) {
                    logger.warn("throttle: the jdbc store's events (LISTEN " + this.channel + ") cannot be heard ("
                            + ex.getMessage() + "); every decision asks the database until they are, tried every "
                            + RETRY_MILLIS + " ms");
                    lost = true;
                }
                sleep();
            } finally {
                this.listening = null;
            }
        }
        this.hearing = false;
    }

    private void hearOn(Connection connection, PGConnection postgres) throws SQLException {
        long quietSince = System.nanoTime();
        while (!this.closed) {
            PGNotification[] notifications = postgres.getNotifications(WAIT_MILLIS);
            if (notifications != null && notifications.length > 0) {
                for (PGNotification notification : notifications) {
                    apply(notification.getParameter());
                }
                quietSince = System.nanoTime();
            } else if (System.nanoTime() - quietSince > QUIET_CHECK_NANOS) {
                try (Statement statement = connection.createStatement()) {
                    statement.setQueryTimeout(this.calls.queryTimeoutSeconds());
                    statement.execute("SELECT 1");
                }
                quietSince = System.nanoTime();
            }
        }
    }

    private void sleep() {
        try {
            Thread.sleep(RETRY_MILLIS);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            this.closed = true;
        }
    }

    /** Stops listening and gives the connection back. */
    void close() {
        this.closed = true;
        this.hearing = false;
        this.listener.interrupt();
        Connection connection = this.listening;
        if (connection != null) {
            try {
                connection.close();
            } catch (SQLException | RuntimeException ex) {
                // closed already, or closing elsewhere
            }
        }
    }
}
