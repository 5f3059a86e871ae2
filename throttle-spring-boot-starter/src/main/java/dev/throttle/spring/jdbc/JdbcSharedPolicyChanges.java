package dev.throttle.spring.jdbc;

import dev.throttle.spring.fleet.SharedPolicyChanges;
import dev.throttle.spring.fleet.StoredPolicyChange;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The policy changes of a fleet in the application's PostgreSQL database: a row per changed policy in
 * {@code <prefix>policy_changes}, numbered from one sequence by {@code <prefix>save_policy_change}
 * (the schema script holds both). Every instance reads the policies' numbers every
 * {@link #POLL_INTERVAL} (a handful of rows: one per changed policy) and is told of each policy whose
 * number changed since its last read, so a change reaches every instance within a second without a
 * connection held open per instance. Reading the whole (small) set rather than "numbers above the
 * last seen" keeps a change whose transaction committed after a later-numbered one from being missed.
 * After reads failed (the database was down), the first read that works tells the listener to read
 * every change again. Saves and reads wait at most the store's timeout. Thread-safe.
 */
public final class JdbcSharedPolicyChanges implements SharedPolicyChanges {

    private static final Log logger = LogFactory.getLog(JdbcSharedPolicyChanges.class);

    /** How often an instance reads the numbers of the stored changes. */
    static final Duration POLL_INTERVAL = Duration.ofMillis(500);

    private final JdbcCalls calls;

    private final String saveSql;

    private final String loadSql;

    private final String versionsSql;

    private final ScheduledExecutorService polling = Executors.newSingleThreadScheduledExecutor((task) -> {
        Thread thread = new Thread(task, "throttle-policy-changes");
        thread.setDaemon(true);
        return thread;
    });

    /** The number of each policy's change at the last read; touched only by the polling thread. */
    private final Map<String, Long> seen = new HashMap<>();

    /** Whether the last read failed: the next one that works tells the listener to read everything. */
    private boolean failing;

    /**
     * Creates the shared changes on the application's database.
     * @param dataSource the application's data source, on PostgreSQL, with the schema script applied
     * @param tablePrefix the store's table prefix ({@code throttle.store.jdbc.table-prefix})
     * @param timeout the longest a save or a read waits for the database
     */
    public JdbcSharedPolicyChanges(DataSource dataSource, String tablePrefix, Duration timeout) {
        JdbcThrottleStore.checkTablePrefix(tablePrefix);
        this.calls = new JdbcCalls(dataSource, tablePrefix, timeout, 1, null);
        this.saveSql = "SELECT version, changed_at FROM " + tablePrefix + "save_policy_change(?, ?::text[], ?)";
        this.loadSql = "SELECT policy_name, version, settings, changed_by, changed_at FROM " + tablePrefix
                + "policy_changes WHERE version > 0";
        this.versionsSql = "SELECT policy_name, version FROM " + tablePrefix + "policy_changes WHERE version > 0";
    }

    @Override
    public StoredPolicyChange save(String policy, @Nullable Map<String, String> settings, String by) {
        return this.calls.await((connection) -> store(connection, policy, settings, by), "savePolicyChange", policy);
    }

    private StoredPolicyChange store(
            Connection connection, String policy, @Nullable Map<String, String> settings, String by)
            throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(this.saveSql)) {
            statement.setQueryTimeout(this.calls.queryTimeoutSeconds());
            statement.setString(1, policy);
            statement.setArray(2, (settings != null) ? connection.createArrayOf("text", flatten(settings)) : null);
            statement.setString(3, by);
            try (ResultSet result = statement.executeQuery()) {
                if (!result.next()) {
                    throw new SQLException("the database did not store the change of policy '" + policy + "'");
                }
                return new StoredPolicyChange(
                        policy,
                        result.getLong(1),
                        (settings != null) ? Map.copyOf(settings) : null,
                        by,
                        result.getTimestamp(2).toInstant());
            }
        }
    }

    /** Names and values in turn. */
    private static String[] flatten(Map<String, String> settings) {
        String[] flat = new String[settings.size() * 2];
        int i = 0;
        for (Map.Entry<String, String> setting : settings.entrySet()) {
            flat[i++] = setting.getKey();
            flat[i++] = setting.getValue();
        }
        return flat;
    }

    @Override
    public List<StoredPolicyChange> loadAll() {
        return this.calls.await(this::load, "loadPolicyChanges", "*");
    }

    private List<StoredPolicyChange> load(Connection connection) throws SQLException {
        List<StoredPolicyChange> changes = new ArrayList<>();
        try (PreparedStatement statement = connection.prepareStatement(this.loadSql)) {
            statement.setQueryTimeout(this.calls.queryTimeoutSeconds());
            try (ResultSet result = statement.executeQuery()) {
                while (result.next()) {
                    Array settings = result.getArray(3);
                    Timestamp at = result.getTimestamp(5);
                    changes.add(new StoredPolicyChange(
                            result.getString(1),
                            result.getLong(2),
                            (settings != null) ? settings((String[]) settings.getArray()) : null,
                            result.getString(4),
                            at.toInstant()));
                }
            }
        }
        return changes;
    }

    private static Map<String, String> settings(String[] flat) {
        Map<String, String> settings = new LinkedHashMap<>();
        for (int i = 0; i + 1 < flat.length; i += 2) {
            settings.put(flat[i], flat[i + 1]);
        }
        return settings;
    }

    @Override
    public void listen(Listener listener) {
        long interval = POLL_INTERVAL.toMillis();
        this.polling.scheduleWithFixedDelay(() -> poll(listener), interval, interval, TimeUnit.MILLISECONDS);
    }

    /** One read of the changes' numbers, told to the listener; never throws (the schedule would stop). */
    private void poll(Listener listener) {
        Map<String, Long> versions;
        try {
            versions = this.calls.await(this::versions, "pollPolicyChanges", "*");
        } catch (RuntimeException ex) {
            if (!this.failing) {
                logger.debug("Reading the fleet's policy changes failed; trying again", ex);
            }
            this.failing = true;
            return;
        }
        try {
            if (this.failing) {
                this.failing = false;
                this.seen.clear();
                this.seen.putAll(versions);
                listener.reconnected();
                return;
            }
            List<String> changed = new ArrayList<>();
            versions.forEach((policy, version) -> {
                if (!version.equals(this.seen.get(policy))) {
                    changed.add(policy);
                }
            });
            this.seen.clear();
            this.seen.putAll(versions);
            for (String policy : changed) {
                listener.changed(policy);
            }
        } catch (RuntimeException ex) {
            logger.warn("Applying the fleet's policy changes failed; the next change reads them again", ex);
        }
    }

    private Map<String, Long> versions(Connection connection) throws SQLException {
        Map<String, Long> versions = new HashMap<>();
        try (PreparedStatement statement = connection.prepareStatement(this.versionsSql)) {
            statement.setQueryTimeout(this.calls.queryTimeoutSeconds());
            try (ResultSet result = statement.executeQuery()) {
                while (result.next()) {
                    versions.put(result.getString(1), result.getLong(2));
                }
            }
        }
        return versions;
    }

    @Override
    public void close() {
        this.polling.shutdownNow();
        this.calls.close();
    }
}
