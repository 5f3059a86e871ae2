package dev.throttle.spring.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The jdbc store's schema: its script ({@value #SCRIPT} on the classpath), and the checks a start
 * makes before the first request.
 */
public final class JdbcSchema {

    /** Where the schema's script lives on the classpath, for Flyway and Liquibase users to copy. */
    public static final String SCRIPT = "META-INF/throttle/jdbc/schema-postgresql.sql";

    /** The name the script gives every table and function before the prefix replaces it. */
    private static final String SCRIPT_PREFIX = JdbcThrottleStore.DEFAULT_TABLE_PREFIX;

    /** The database product the store runs on, as the driver names it. */
    public static final String POSTGRESQL = "PostgreSQL";

    private JdbcSchema() {}

    /**
     * Returns the schema's script with {@code tablePrefix} in every name.
     * @param tablePrefix the table prefix
     * @return the script, one text that PostgreSQL runs as a whole
     */
    public static String script(String tablePrefix) {
        JdbcThrottleStore.checkTablePrefix(tablePrefix);
        try (InputStream in = JdbcSchema.class.getClassLoader().getResourceAsStream(SCRIPT)) {
            if (in == null) {
                throw new IllegalStateException("throttle: " + SCRIPT + " is missing from the classpath");
            }
            String text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            return text.replace(SCRIPT_PREFIX, tablePrefix);
        } catch (IOException ex) {
            throw new UncheckedIOException("throttle: cannot read " + SCRIPT, ex);
        }
    }

    /**
     * Returns the name of the database {@code dataSource} connects to.
     * @param dataSource the data source
     * @return its product name, such as {@value #POSTGRESQL}
     * @throws SQLException when it cannot be reached
     */
    public static String productName(DataSource dataSource) throws SQLException {
        try (Connection connection = dataSource.getConnection()) {
            return connection.getMetaData().getDatabaseProductName();
        }
    }

    /**
     * Creates what is missing of the schema and replaces its functions: the script, run as one
     * statement in one transaction.
     * @param dataSource the data source
     * @param tablePrefix the table prefix
     * @throws SQLException when the database refused it
     */
    public static void create(DataSource dataSource, String tablePrefix) throws SQLException {
        String script = script(tablePrefix);
        try (Connection connection = dataSource.getConnection()) {
            boolean autoCommit = connection.getAutoCommit();
            connection.setAutoCommit(false);
            try (Statement statement = connection.createStatement()) {
                // stores starting together: one creates, the others wait for it, then replace alike
                statement.execute("SELECT pg_advisory_xact_lock(" + SCRIPT.hashCode() + ")");
                statement.execute(script);
                connection.commit();
            } catch (SQLException | RuntimeException ex) {
                connection.rollback();
                throw ex;
            } finally {
                connection.setAutoCommit(autoCommit);
            }
        }
    }

    /**
     * Returns what of the schema is missing: the state table, the decide function, or what holds the
     * fleet's policy changes, bans and remote pauses (a schema from before they were kept there).
     * @param dataSource the data source
     * @param tablePrefix the table prefix
     * @return the missing table's or function's name, or null when all are there
     * @throws SQLException when the database cannot be reached
     */
    public static @Nullable String missing(DataSource dataSource, String tablePrefix) throws SQLException {
        String table = tablePrefix + "state";
        String function = tablePrefix + "decide(text,text,text,bigint[],text,bigint,bigint,bigint[])";
        String changes = tablePrefix + "policy_changes";
        String save = tablePrefix + "save_policy_change(text,text[],text)";
        String bans = tablePrefix + "bans";
        String pauses = tablePrefix + "remote_pauses";
        try (Connection connection = dataSource.getConnection();
                PreparedStatement statement = connection.prepareStatement("SELECT to_regclass(?) IS NOT NULL,"
                        + " to_regprocedure(?) IS NOT NULL, to_regclass(?) IS NOT NULL, to_regprocedure(?) IS NOT NULL,"
                        + " to_regclass(?) IS NOT NULL, to_regclass(?) IS NOT NULL"); ) {
            statement.setString(1, table);
            statement.setString(2, function);
            statement.setString(3, changes);
            statement.setString(4, save);
            statement.setString(5, bans);
            statement.setString(6, pauses);
            try (ResultSet result = statement.executeQuery()) {
                result.next();
                if (!result.getBoolean(1)) {
                    return "table " + table;
                }
                if (!result.getBoolean(2)) {
                    return "function " + tablePrefix + "decide";
                }
                if (!result.getBoolean(3)) {
                    return "table " + changes;
                }
                if (!result.getBoolean(4)) {
                    return "function " + tablePrefix + "save_policy_change";
                }
                if (!result.getBoolean(5)) {
                    return "table " + bans;
                }
                return result.getBoolean(6) ? null : "table " + pauses;
            }
        }
    }
}
