package dev.throttle.spring.autoconfigure;

import dev.throttle.ThrottleStore;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.bans.SharedBans;
import dev.throttle.spring.fleet.SharedPolicyChanges;
import dev.throttle.spring.jdbc.JdbcNearCacheSettings;
import dev.throttle.spring.jdbc.JdbcSchema;
import dev.throttle.spring.jdbc.JdbcSharedBans;
import dev.throttle.spring.jdbc.JdbcSharedPolicyChanges;
import dev.throttle.spring.jdbc.JdbcThrottleStore;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.sql.DataSource;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The jdbc store, with {@code throttle.store.type=jdbc}, on the application's own {@link DataSource}
 * (PostgreSQL), wrapped in the failure mode, and warmed up before the web server starts
 * ({@link ThrottleStoreWarmUp}). Before that, the start checks what would otherwise fail the first
 * request: no data source, a database other than PostgreSQL, and a schema missing after
 * {@code throttle.store.jdbc.initialize-schema} ran; each fails the start, named in the failure
 * analysis. A database that cannot be reached at startup is not a startup failure: the failure mode
 * applies until it answers, as with Redis.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty(name = "throttle.store.type", havingValue = "jdbc")
class JdbcStoreConfiguration {

    private static final Log logger = LogFactory.getLog(JdbcStoreConfiguration.class);

    /** The longest the start waits for the database to answer its first question. */
    static final Duration REACH_BOUND = Duration.ofSeconds(10);

    @Bean
    @ConditionalOnMissingBean(ThrottleStore.class)
    ResilientThrottleStore throttleStore(
            ObjectProvider<DataSource> dataSource, ThrottleProperties properties, TimeSource throttleTimeSource) {
        ThrottleProperties.Jdbc jdbc = properties.getStore().getJdbc();
        // checked whatever the failure mode, so that one setting gets one answer on every store type
        long localMaximumKeys = MemoryStoreConfiguration.maximumKeys(properties);
        PolicyDurability.warnUnused(properties, "jdbc");
        DataSource source = dataSource.getIfUnique();
        if (source == null) {
            throw new ThrottleConfigurationException("throttle.store.type=jdbc needs one DataSource bean (found "
                    + dataSource.stream().count() + "): add spring-boot-starter-jdbc and the PostgreSQL driver "
                    + "(org.postgresql:postgresql) and set spring.datasource.url, or declare a DataSource");
        }
        List<String> unsupported = properties.getPolicies().entrySet().stream()
                .filter((policy) -> policy.getValue().getAlgorithm() != null
                        && !JdbcThrottleStore.algorithms()
                                .contains(policy.getValue().getAlgorithm()))
                .map((policy) -> "throttle.policies." + policy.getKey() + ".algorithm="
                        + policy.getValue().getAlgorithm())
                .toList();
        if (!unsupported.isEmpty()) {
            throw new ThrottleConfigurationException(String.join(", ", unsupported) + " cannot apply on "
                    + "throttle.store.type=jdbc, which runs "
                    + JdbcThrottleStore.algorithms()
                    + " for now: use the memory or Redis store for it");
        }
        JdbcThrottleStore store;
        try {
            store = new JdbcThrottleStore(
                    source,
                    jdbc.getTablePrefix(),
                    jdbc.getTimeout(),
                    jdbc.getMaxConnections(),
                    null,
                    jdbc.getPurgeInterval(),
                    jdbc.getPurgeBatchSize(),
                    nearCache(properties));
        } catch (IllegalArgumentException ex) {
            throw new ThrottleConfigurationException(ex.getMessage(), ex);
        }
        try {
            checkDatabase(source, jdbc);
        } catch (RuntimeException ex) {
            store.close();
            throw ex;
        }
        FailureMode mode = jdbc.getFailureMode();
        Map<String, FailureMode> policyModes = new LinkedHashMap<>();
        properties.getPolicies().forEach((name, policy) -> {
            if (policy.getFailureMode() != null) {
                policyModes.put(name, policy.getFailureMode());
            }
        });
        boolean anyLocal = mode == FailureMode.LOCAL || policyModes.containsValue(FailureMode.LOCAL);
        MemoryThrottleStore local = anyLocal ? new MemoryThrottleStore(throttleTimeSource, localMaximumKeys) : null;
        return new ResilientThrottleStore(store, mode, local, throttleTimeSource, policyModes);
    }

    /**
     * The near cache, when enabled: it answers every policy but those that give back every successful
     * call ({@code count: failures}, or a Spring Security ip-policy that does not set its count, which
     * counts failures only), unless a policy says otherwise ({@code near-cache}).
     */
    static JdbcNearCacheSettings nearCache(ThrottleProperties properties) {
        ThrottleProperties.JdbcNearCache nearCache =
                properties.getStore().getJdbc().getNearCache();
        if (!nearCache.isEnabled()) {
            return JdbcNearCacheSettings.disabled();
        }
        String loginIpPolicy = properties.getSecurity().getAuthentication().getIpPolicy();
        Set<String> databaseOnly = new HashSet<>();
        properties.getPolicies().forEach((name, policy) -> {
            Boolean own = policy.getNearCache();
            boolean failuresOnly = policy.getCount() == ThrottleProperties.Count.FAILURES
                    || (name.equals(loginIpPolicy) && !policy.hasCount());
            if (!((own != null) ? own : !failuresOnly)) {
                databaseOnly.add(name);
            }
        });
        return JdbcNearCacheSettings.of(nearCache.getMaximumKeys(), nearCache.getMinimumRetryAfter(), databaseOnly);
    }

    /**
     * Policy changes made at run time, stored in the database and read by every instance sharing it.
     * After the store, whose start created or checked the schema that holds them.
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(SharedPolicyChanges.class)
    @ConditionalOnSingleCandidate(DataSource.class)
    SharedPolicyChanges throttleSharedPolicyChanges(
            DataSource dataSource, ThrottleProperties properties, ObjectProvider<ThrottleStore> throttleStore) {
        throttleStore.getIfAvailable();
        ThrottleProperties.Jdbc jdbc = properties.getStore().getJdbc();
        return new JdbcSharedPolicyChanges(dataSource, jdbc.getTablePrefix(), jdbc.getTimeout());
    }

    /**
     * Bans, stored in the database and read by every instance sharing it. After the store, whose
     * start created or checked the schema that holds them.
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(SharedBans.class)
    @ConditionalOnSingleCandidate(DataSource.class)
    SharedBans throttleSharedBans(
            DataSource dataSource,
            ThrottleProperties properties,
            TimeSource throttleTimeSource,
            ObjectProvider<ThrottleStore> throttleStore) {
        throttleStore.getIfAvailable();
        ThrottleProperties.Jdbc jdbc = properties.getStore().getJdbc();
        return new JdbcSharedBans(dataSource, jdbc.getTablePrefix(), jdbc.getTimeout(), throttleTimeSource);
    }

    /**
     * Fails the start on a database other than PostgreSQL, and on a schema missing once
     * {@code initialize-schema} has run; logs and goes on when the database cannot be reached.
     */
    static void checkDatabase(DataSource dataSource, ThrottleProperties.Jdbc jdbc) {
        String product;
        try {
            product = productName(dataSource);
        } catch (SQLException ex) {
            logger.warn("throttle: the jdbc store could not reach its database at startup (" + ex.getMessage()
                    + "); its schema is not checked, and the failure mode applies until it answers");
            return;
        }
        if (product == null) {
            logger.warn("throttle: the jdbc store's database did not answer within " + REACH_BOUND.toSeconds()
                    + " s at startup; its schema is not checked, and the failure mode applies until it answers"
                    + " (a database that takes connections and never answers holds a connect for the driver's"
                    + " loginTimeout and socketTimeout, which PostgreSQL's driver does not bound by default)");
            return;
        }
        if (!JdbcSchema.POSTGRESQL.equals(product)) {
            throw new ThrottleConfigurationException("throttle.store.type=jdbc runs on PostgreSQL, but the "
                    + "DataSource connects to " + product + ": point spring.datasource.url at a PostgreSQL "
                    + "database, or use throttle.store.type=memory or redis");
        }
        String prefix = jdbc.getTablePrefix();
        try {
            if (jdbc.getInitializeSchema() == ThrottleProperties.InitializeSchema.ALWAYS) {
                JdbcSchema.create(dataSource, prefix);
            }
            String missing = JdbcSchema.missing(dataSource, prefix);
            if (missing != null) {
                throw new ThrottleConfigurationException("throttle.store.type=jdbc: the database has no " + missing
                        + " (throttle.store.jdbc.initialize-schema="
                        + jdbc.getInitializeSchema().name().toLowerCase(java.util.Locale.ROOT)
                        + "): set throttle.store.jdbc.initialize-schema=always to create it at startup, or apply "
                        + "the script " + JdbcSchema.SCRIPT + " from the starter's jar in your migrations"
                        + (prefix.equals(JdbcThrottleStore.DEFAULT_TABLE_PREFIX)
                                ? ""
                                : " with every 'throttle_' replaced by '" + prefix + "'"));
            }
        } catch (SQLException ex) {
            throw new ThrottleConfigurationException(
                    "throttle.store.type=jdbc: the store's schema could not be checked or created: " + ex.getMessage(),
                    ex);
        }
    }

    /**
     * The database's product name, or null when it did not answer within {@link #REACH_BOUND}: asked on
     * a thread of its own, since PostgreSQL's driver waits for a login without bound by default, and a
     * database that takes connections and never answers (frozen, or behind a dead proxy) must not hold
     * the start forever. That thread is left to its connect.
     */
    private static @Nullable String productName(DataSource dataSource) throws SQLException {
        CompletableFuture<String> asked = new CompletableFuture<>();
        Thread thread = new Thread(
                () -> {
                    try {
                        asked.complete(JdbcSchema.productName(dataSource));
                    } catch (SQLException | RuntimeException | Error ex) {
                        asked.completeExceptionally(ex);
                    }
                },
                "throttle-jdbc-check");
        thread.setDaemon(true);
        thread.start();
        try {
            return asked.get(REACH_BOUND.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException ex) {
            return null;
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            return null;
        } catch (ExecutionException ex) {
            if (ex.getCause() instanceof SQLException failure) {
                throw failure;
            }
            if (ex.getCause() instanceof RuntimeException failure) {
                throw failure;
            }
            throw new IllegalStateException("throttle: asking the database its name failed", ex.getCause());
        }
    }

    @Bean
    ThrottleStoreWarmUp throttleStoreWarmUp(ObjectProvider<Throttler> throttler) {
        return new ThrottleStoreWarmUp(throttler);
    }
}
