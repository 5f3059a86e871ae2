package dev.throttle.spring.jdbc;

import dev.throttle.TimeSource;
import dev.throttle.spring.bans.ActiveBan;
import dev.throttle.spring.bans.SharedBans;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * The active bans of a fleet in the application's PostgreSQL database: a row per banned key in
 * {@code <prefix>bans} with the ban's end (the schema script creates it). Every instance reads the
 * bans that have not ended every {@link #POLL_INTERVAL} (a ban is rare: a handful of rows) and is
 * told of each one that started, was extended or was lifted since its last read, so a ban reaches
 * every instance within a second and checking one stays a lookup in the instance's memory. After
 * reads failed (the database was down), the first read that works tells the listener to read every
 * ban again. Saves and lifts never make their caller wait; each is bounded by the store's timeout.
 * Thread-safe.
 */
public final class JdbcSharedBans implements SharedBans {

    private static final Log logger = LogFactory.getLog(JdbcSharedBans.class);

    /** How often an instance reads the bans. */
    static final Duration POLL_INTERVAL = Duration.ofMillis(500);

    private final JdbcCalls calls;

    private final TimeSource clock;

    private final String saveSql;

    private final String dropEndedSql;

    private final String liftSql;

    private final String loadSql;

    private final ScheduledExecutorService polling = Executors.newSingleThreadScheduledExecutor((task) -> {
        Thread thread = new Thread(task, "throttle-bans");
        thread.setDaemon(true);
        return thread;
    });

    /** Each ban's end at the last read, by ban and key; touched only by the polling thread. */
    private final Map<List<String>, Long> seen = new HashMap<>();

    /** Whether the last read failed: the next one that works tells the listener to read everything. */
    private boolean failing;

    /**
     * Creates the shared bans on the application's database.
     * @param dataSource the application's data source, on PostgreSQL, with the schema script applied
     * @param tablePrefix the store's table prefix ({@code throttle.store.jdbc.table-prefix})
     * @param timeout the longest a save, a lift or a read waits for the database
     * @param clock the application's clock, which bans end by (as on every store)
     */
    public JdbcSharedBans(DataSource dataSource, String tablePrefix, Duration timeout, TimeSource clock) {
        JdbcThrottleStore.checkTablePrefix(tablePrefix);
        this.calls = new JdbcCalls(dataSource, tablePrefix, timeout, 1, null);
        this.clock = clock;
        String table = tablePrefix + "bans";
        this.saveSql = "INSERT INTO " + table + " AS b (ban_name, ban_key, ends_at) VALUES (?, ?, ?)"
                + " ON CONFLICT (ban_name, ban_key) DO UPDATE SET ends_at = greatest(b.ends_at, EXCLUDED.ends_at)";
        this.dropEndedSql = "DELETE FROM " + table + " WHERE ends_at <= ?";
        this.liftSql = "DELETE FROM " + table + " WHERE ban_name = ? AND ban_key = ?";
        this.loadSql = "SELECT ban_name, ban_key, ends_at FROM " + table + " WHERE ends_at > ?";
    }

    @Override
    public CompletionStage<Void> save(ActiveBan ban, long nowMillis) {
        return this.calls.bounded(
                (connection) -> {
                    try (PreparedStatement statement = connection.prepareStatement(this.saveSql)) {
                        statement.setQueryTimeout(this.calls.queryTimeoutSeconds());
                        statement.setString(1, ban.ban());
                        statement.setString(2, ban.key());
                        statement.setLong(3, ban.until().toEpochMilli());
                        statement.executeUpdate();
                    }
                    // bans that ended are dropped as new ones come: the table holds the live ones and a few more
                    try (PreparedStatement statement = connection.prepareStatement(this.dropEndedSql)) {
                        statement.setQueryTimeout(this.calls.queryTimeoutSeconds());
                        statement.setLong(1, nowMillis);
                        statement.executeUpdate();
                    }
                    return null;
                },
                "saveBan",
                ban.ban());
    }

    @Override
    public CompletionStage<Void> lift(String ban, String key) {
        return this.calls.bounded(
                (connection) -> {
                    try (PreparedStatement statement = connection.prepareStatement(this.liftSql)) {
                        statement.setQueryTimeout(this.calls.queryTimeoutSeconds());
                        statement.setString(1, ban);
                        statement.setString(2, key);
                        statement.executeUpdate();
                    }
                    return null;
                },
                "liftBan",
                ban);
    }

    @Override
    public List<ActiveBan> loadAll(long nowMillis) {
        return this.calls.await((connection) -> load(connection, nowMillis), "loadBans", "*");
    }

    private List<ActiveBan> load(Connection connection, long nowMillis) throws SQLException {
        List<ActiveBan> bans = new ArrayList<>();
        try (PreparedStatement statement = connection.prepareStatement(this.loadSql)) {
            statement.setQueryTimeout(this.calls.queryTimeoutSeconds());
            statement.setLong(1, nowMillis);
            try (ResultSet result = statement.executeQuery()) {
                while (result.next()) {
                    bans.add(new ActiveBan(
                            result.getString(1), result.getString(2), Instant.ofEpochMilli(result.getLong(3))));
                }
            }
        }
        return bans;
    }

    @Override
    public void listen(Listener listener) {
        long interval = POLL_INTERVAL.toMillis();
        this.polling.scheduleWithFixedDelay(() -> poll(listener), interval, interval, TimeUnit.MILLISECONDS);
    }

    /** One read of the live bans, its differences told to the listener; never throws (the schedule would stop). */
    private void poll(Listener listener) {
        long now = this.clock.currentTimeMillis();
        List<ActiveBan> live;
        try {
            live = loadAll(now);
        } catch (RuntimeException ex) {
            if (!this.failing) {
                logger.debug("Reading the fleet's bans failed; trying again", ex);
            }
            this.failing = true;
            return;
        }
        try {
            Map<List<String>, Long> current = new HashMap<>();
            List<ActiveBan> started = new ArrayList<>();
            for (ActiveBan ban : live) {
                List<String> id = List.of(ban.ban(), ban.key());
                long until = ban.until().toEpochMilli();
                current.put(id, until);
                Long before = this.seen.get(id);
                if (before == null || before != until) {
                    started.add(ban);
                }
            }
            List<List<String>> lifted = new ArrayList<>();
            this.seen.forEach((id, until) -> {
                // a ban gone from the table before its end was lifted; one that ended ends on its own
                if (!current.containsKey(id) && until > now) {
                    lifted.add(id);
                }
            });
            this.seen.clear();
            this.seen.putAll(current);
            if (this.failing) {
                this.failing = false;
                listener.reconnected();
                return;
            }
            started.forEach(listener::started);
            lifted.forEach((id) -> listener.lifted(id.get(0), id.get(1)));
        } catch (RuntimeException ex) {
            logger.warn("Applying the fleet's bans failed; the next read applies them again", ex);
        }
    }

    @Override
    public void close() {
        this.polling.shutdownNow();
        this.calls.close();
    }
}
