package dev.throttle.spring.jdbc;

import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.ThrottleStore;
import dev.throttle.TimeSource;
import dev.throttle.resilience.RefusalMemory;
import dev.throttle.spring.client.RemotePauses;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Throttling state in the application's own PostgreSQL database, shared by every instance that uses
 * it, through the application's {@link DataSource}.
 *
 * <p>Each decision, refund and peek is one call of the PL/pgSQL function {@code <prefix>decide}
 * ({@code META-INF/throttle/jdbc/schema-postgresql.sql}, which says how it decides): one round trip,
 * decided in the database under the key's row lock, on the database's clock. A reset is one
 * {@code DELETE}. The schema must exist ({@link JdbcSchema}).
 *
 * <p>Connections: the store runs its calls on threads of its own, at most {@code maxConnections},
 * each borrowing one connection from the application's pool for one call, so it never holds more of
 * the pool than that. Every call is bounded by the timeout: a call the database has not answered
 * by then fails with {@link JdbcStoreException}. Wrap the store in a
 * {@link dev.throttle.resilience.ResilientThrottleStore} to turn failures into a failure mode.
 *
 * <p>Near cache of refusals ({@link JdbcNearCacheSettings}, off unless given): a refusal the
 * database gave answers the key's next calls on this instance until its Retry-After, without a call
 * to the database, while the instance hears the store's events ({@code LISTEN <prefix>events}, on one
 * connection of the pool held for as long as the store runs). Resets, refunds and policy changes are
 * published there ({@code pg_notify}) and drop the refusals on every instance. Without it, refusals
 * are remembered only to answer during an outage.
 *
 * <p>Expired rows (their state neutral again) are read as no row; with a purge interval, they are
 * deleted in batches on the store's threads ({@code <prefix>purge}).
 *
 * <p>Thread-safe.
 */
public final class JdbcThrottleStore implements ThrottleStore {

    /** Default table prefix, as {@code throttle.store.jdbc.table-prefix}. */
    public static final String DEFAULT_TABLE_PREFIX = "throttle_";

    /** Default bound on each call, as {@code throttle.store.jdbc.timeout}. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(1);

    /** Default bound on the connections the store holds at once, as {@code throttle.store.jdbc.max-connections}. */
    public static final int DEFAULT_MAX_CONNECTIONS = 4;

    /** The algorithms that have a PL/pgSQL twin. */
    static final Set<String> ALGORITHMS =
            Set.of("token-bucket", "gcra", "fixed-window", "lockout", "sliding-log", "concurrency");

    /**
     * Returns the algorithms this store runs, by their configuration names.
     * @return for example {@code [fixed-window, gcra, lockout, sliding-log, token-bucket]}, sorted
     */
    public static List<String> algorithms() {
        return ALGORITHMS.stream().sorted().toList();
    }

    /** A prefix that needs no quoting: lower-case letters, digits and underscores. */
    private static final Pattern PREFIX = Pattern.compile("[a-z_][a-z0-9_]{0,40}");

    private static final Log logger = LogFactory.getLog(JdbcThrottleStore.class);

    private final Map<Policy, JdbcLimiter> limiters = new ConcurrentHashMap<>();

    /** The refusals each policy name was given, remembered for an outage. */
    private final Map<String, RefusalMemory> remembered = new ConcurrentHashMap<>();

    private final @Nullable TimeSource clock;

    private final JdbcCalls calls;

    private final @Nullable ScheduledExecutorService purge;

    private final JdbcNearCacheSettings nearCache;

    /** The events of the near cache; null without one. */
    private final @Nullable JdbcEvents events;

    /**
     * Creates a store with the default prefix, timeout and connections, on the database's clock,
     * without a purge.
     * @param dataSource the application's data source, on PostgreSQL
     */
    public JdbcThrottleStore(DataSource dataSource) {
        this(dataSource, DEFAULT_TABLE_PREFIX, DEFAULT_TIMEOUT, DEFAULT_MAX_CONNECTIONS, null, null, 0);
    }

    /**
     * Creates a store.
     * @param dataSource the application's data source, on PostgreSQL
     * @param tablePrefix what the table's and the functions' names start with
     * @param timeout the longest any call waits for the database
     * @param maxConnections the most connections of the pool the store holds at once
     * @param clock the clock to pass with every call, or null for the database's clock (tests that
     * drive a {@link dev.throttle.ManualTimeSource})
     * @param purgeInterval how often expired rows are deleted, or null for never
     * @param purgeBatchSize the most rows one delete removes
     * @throws IllegalArgumentException when a setting is invalid, with a message that names its property
     */
    public JdbcThrottleStore(
            DataSource dataSource,
            String tablePrefix,
            Duration timeout,
            int maxConnections,
            @Nullable TimeSource clock,
            @Nullable Duration purgeInterval,
            int purgeBatchSize) {
        this(
                dataSource,
                tablePrefix,
                timeout,
                maxConnections,
                clock,
                purgeInterval,
                purgeBatchSize,
                JdbcNearCacheSettings.disabled());
    }

    /**
     * Creates a store, with a near cache of refusals unless {@code nearCache} is disabled; its events
     * are listened for from here on, on a connection of the pool of its own ({@link #eventsHeard()}).
     * @param dataSource the application's data source, on PostgreSQL
     * @param tablePrefix what the table's and the functions' names start with
     * @param timeout the longest any call waits for the database
     * @param maxConnections the most connections of the pool the store holds at once for its calls
     * @param clock the clock to pass with every call, or null for the database's clock
     * @param purgeInterval how often expired rows are deleted, or null for never
     * @param purgeBatchSize the most rows one delete removes
     * @param nearCache the near cache's settings
     * @throws IllegalArgumentException when a setting is invalid, with a message that names its property
     */
    public JdbcThrottleStore(
            DataSource dataSource,
            String tablePrefix,
            Duration timeout,
            int maxConnections,
            @Nullable TimeSource clock,
            @Nullable Duration purgeInterval,
            int purgeBatchSize,
            JdbcNearCacheSettings nearCache) {
        if (dataSource == null) {
            throw new IllegalArgumentException("dataSource is required");
        }
        checkTablePrefix(tablePrefix);
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("throttle.store.jdbc.timeout must be positive, was " + timeout);
        }
        if (maxConnections < 1) {
            throw new IllegalArgumentException(
                    "throttle.store.jdbc.max-connections must be at least 1, was " + maxConnections);
        }
        if (purgeInterval != null && (purgeInterval.isNegative() || purgeInterval.isZero())) {
            throw new IllegalArgumentException(
                    "throttle.store.jdbc.purge-interval must be positive, was " + purgeInterval);
        }
        if (purgeInterval != null && purgeBatchSize < 1) {
            throw new IllegalArgumentException(
                    "throttle.store.jdbc.purge-batch-size must be at least 1, was " + purgeBatchSize);
        }
        this.calls = new JdbcCalls(dataSource, tablePrefix, timeout, maxConnections, clock);
        this.clock = clock;
        this.nearCache = (nearCache != null) ? nearCache : JdbcNearCacheSettings.disabled();
        this.events = this.nearCache.isEnabled() ? startEvents(dataSource) : null;
        this.purge = (purgeInterval != null) ? startPurge(purgeInterval, purgeBatchSize) : null;
    }

    /** The events, when the PostgreSQL driver is there to hear them; else none (and so no local answers). */
    private @Nullable JdbcEvents startEvents(DataSource dataSource) {
        try {
            Class.forName("org.postgresql.PGConnection", false, JdbcThrottleStore.class.getClassLoader());
        } catch (ClassNotFoundException | LinkageError ex) {
            logger.warn("throttle: no PostgreSQL driver (org.postgresql) to hear the jdbc store's events; its near "
                    + "cache answers nothing, every decision asks the database");
            return null;
        }
        JdbcEvents started = new JdbcEvents(dataSource, this.calls, new JdbcEvents.Target() {
            @Override
            public void forget(String policy, String key) {
                RefusalMemory entries = JdbcThrottleStore.this.remembered.get(policy);
                if (entries != null) {
                    entries.forget(key);
                }
            }

            @Override
            public void forgetPolicy(String policy) {
                RefusalMemory entries = JdbcThrottleStore.this.remembered.get(policy);
                if (entries != null) {
                    entries.forgetAll();
                }
            }

            @Override
            public void forgetAll() {
                JdbcThrottleStore.this.remembered.values().forEach(RefusalMemory::forgetAll);
            }
        });
        started.start();
        return started;
    }

    /**
     * Checks a table prefix: lower-case letters, digits and underscores, starting with a letter or
     * an underscore, so that it needs no quoting.
     * @param tablePrefix the prefix
     * @throws IllegalArgumentException when it is not one, naming the property
     */
    static void checkTablePrefix(String tablePrefix) {
        if (tablePrefix == null || !PREFIX.matcher(tablePrefix).matches()) {
            throw new IllegalArgumentException("throttle.store.jdbc.table-prefix must be lower-case letters, digits "
                    + "and underscores, starting with a letter or '_' (at most 41), was '" + tablePrefix + "'");
        }
    }

    /**
     * Returns the limiter of {@code policy}. A policy bound again under other numbers (a plan, a
     * change at run time) gets a limiter of its own over the same rows, whose state every algorithm
     * function reads whatever numbers wrote it.
     * @throws IllegalArgumentException when the policy's algorithm has no PL/pgSQL twin
     */
    @Override
    public Limiter limiter(Policy policy) {
        JdbcLimiter limiter = this.limiters.get(policy);
        if (limiter == null) {
            String algorithm = policy.algorithm().id();
            if (!ALGORITHMS.contains(algorithm)) {
                throw new IllegalArgumentException("throttle policy '" + policy.name() + "' uses algorithm '"
                        + algorithm + "', which throttle.store.type=jdbc does not run (it runs " + ALGORITHMS + ")");
            }
            JdbcLimiter created =
                    new JdbcLimiter(this.calls, policy, rememberedOf(policy.name()), this.events, this.nearCache);
            limiter = this.limiters.putIfAbsent(policy, created);
            if (limiter == null) {
                limiter = created;
                if (this.limiters.keySet().stream()
                        .anyMatch((p) -> p.name().equals(policy.name()) && !p.equals(policy))) {
                    policyChanged(policy.name());
                }
            }
        }
        return limiter;
    }

    /**
     * Forgets the policy's remembered refusals here and, with a near cache, tells every other instance
     * to, so that a change made everywhere takes effect everywhere at once. (A refusal answers only
     * the limiter that was refused, so one under other numbers never answers these.)
     */
    private void policyChanged(String policy) {
        RefusalMemory entries = this.remembered.get(policy);
        if (entries != null) {
            entries.forgetAll();
        }
        JdbcEvents events = this.events;
        if (events != null) {
            events.publishPolicy(policy);
        }
    }

    private RefusalMemory rememberedOf(String policy) {
        return this.remembered.computeIfAbsent(
                policy,
                (name) -> new RefusalMemory(
                        this.nearCache.maximumKeys(),
                        this.nearCache.minimumRetryAfter().toMillis(),
                        this.clock));
    }

    /**
     * Returns the near cache's settings.
     * @return the settings, {@link JdbcNearCacheSettings#disabled()} without one
     */
    public JdbcNearCacheSettings nearCacheSettings() {
        return this.nearCache;
    }

    /**
     * Returns a future completed once this instance first listens for the store's events, from when
     * its near cache answers; without a near cache (or the PostgreSQL driver), one that never completes.
     * @return the future
     */
    public CompletableFuture<Void> eventsHeard() {
        JdbcEvents events = this.events;
        return (events != null) ? events.heard() : new CompletableFuture<>();
    }

    /**
     * Whether this instance hears the store's events now, so that its near cache answers.
     * @return false without a near cache, or while the listening connection is lost
     */
    public boolean hearsEvents() {
        JdbcEvents events = this.events;
        return events != null && events.hears();
    }

    /**
     * How many refusals are remembered on this instance, all policies together (an estimate).
     * @return the count
     */
    public long nearCacheSize() {
        long size = 0;
        for (RefusalMemory entries : this.remembered.values()) {
            size += entries.size();
        }
        return size;
    }

    @Override
    public String kind() {
        return JdbcCalls.KIND;
    }

    /**
     * Returns where the remote pauses of throttled outgoing clients are kept in this database: on the
     * store's connections, under its table prefix, within its timeout, ended by the database's clock.
     * @return the pauses
     */
    public RemotePauses remotePauses() {
        return new JdbcRemotePauses(this.calls);
    }

    /**
     * Returns the table prefix.
     * @return the prefix
     */
    public String tablePrefix() {
        return this.calls.tablePrefix();
    }

    /**
     * Returns the bound on each call.
     * @return the timeout
     */
    public Duration timeout() {
        return this.calls.timeout();
    }

    /**
     * Returns the most connections of the pool the store holds at once.
     * @return the bound
     */
    public int maxConnections() {
        return this.calls.maxConnections();
    }

    /**
     * Deletes up to {@code batchSize} rows whose state is neutral again on the database's clock,
     * waiting at most the timeout.
     * @param batchSize the most rows to delete
     * @return how many were deleted
     * @throws JdbcStoreException when the database did not answer in time or failed
     */
    public int purgeExpired(int batchSize) {
        return this.calls.await((c) -> purgeBatch(c, batchSize), "purge", "*");
    }

    private int purgeBatch(java.sql.Connection connection, int batchSize) throws java.sql.SQLException {
        try (PreparedStatement statement =
                connection.prepareStatement("SELECT " + this.calls.tablePrefix() + "purge(?)")) {
            statement.setQueryTimeout(this.calls.queryTimeoutSeconds());
            statement.setInt(1, batchSize);
            try (ResultSet result = statement.executeQuery()) {
                return result.next() ? result.getInt(1) : 0;
            }
        }
    }

    /**
     * Every {@code interval}, one batch on the store's threads, followed by another while batches
     * come back full: short deletes, each its own transaction, never a long lock.
     */
    private ScheduledExecutorService startPurge(Duration interval, int batchSize) {
        ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor((task) -> {
            Thread thread = new Thread(task, "throttle-jdbc-purge");
            thread.setDaemon(true);
            return thread;
        });
        long millis = interval.toMillis();
        scheduler.scheduleWithFixedDelay(() -> purgeOnce(batchSize, 0), millis, millis, TimeUnit.MILLISECONDS);
        return scheduler;
    }

    /** At most 100 batches in a row; the next interval goes on. */
    private void purgeOnce(int batchSize, int batches) {
        this.calls.runLater(
                (connection) -> {
                    int deleted = purgeBatch(connection, batchSize);
                    if (deleted >= batchSize && batches < 99) {
                        purgeOnce(batchSize, batches + 1);
                    }
                    return null;
                },
                () -> logger.debug("throttle: a purge of expired rows failed; the next interval tries again"));
    }

    /** Stops the purge and the store's threads; the data source stays the application's. */
    @Override
    public void close() {
        if (this.purge != null) {
            this.purge.shutdownNow();
        }
        if (this.events != null) {
            this.events.close();
        }
        this.calls.close();
    }
}
