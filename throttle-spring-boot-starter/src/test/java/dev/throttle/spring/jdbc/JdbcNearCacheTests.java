package dev.throttle.spring.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.throttle.Decision;
import dev.throttle.DecisionSource;
import dev.throttle.LockoutPolicy;
import dev.throttle.SourcedLimiter;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.testing.Eventually;
import dev.throttle.testing.jdbc.SharedPostgres;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The jdbc store's near cache between two instances (two stores, each on a pool of its own) on one
 * real PostgreSQL: a refusal answers on the instance that was given it, and a reset or a refund made
 * on the other instance reaches it through {@code NOTIFY}; a lost listening connection, an unreadable
 * event and keys no payload delimiter may split never leave a refusal standing that the database has
 * undone.
 */
class JdbcNearCacheTests {

    private static final DecisionSource NEAR_CACHE = DecisionSource.nearCache("jdbc");

    private static final DecisionSource DATABASE = DecisionSource.store("jdbc");

    private static final LockoutPolicy LOGIN = LockoutPolicy.of("login", List.of(Duration.ofHours(1)));

    private static final TokenBucketPolicy EXPORT = new TokenBucketPolicy("export", 1, 1, Duration.ofHours(1));

    private HikariDataSource poolA;

    private HikariDataSource poolB;

    private JdbcThrottleStore instanceA;

    private JdbcThrottleStore instanceB;

    @BeforeEach
    void startTwoInstances() {
        SharedPostgres.clear();
        this.poolA = SharedPostgres.newDataSource(named("near-cache-a"), 4);
        this.poolB = SharedPostgres.newDataSource(named("near-cache-b"), 4);
        this.instanceA = store(this.poolA, Set.of("failures"));
        this.instanceB = store(this.poolB, Set.of("failures"));
        this.instanceA.eventsHeard().orTimeout(10, TimeUnit.SECONDS).join();
        this.instanceB.eventsHeard().orTimeout(10, TimeUnit.SECONDS).join();
    }

    @AfterEach
    void stopThem() {
        this.instanceA.close();
        this.instanceB.close();
        this.poolA.close();
        this.poolB.close();
    }

    private static String named(String application) {
        String url = SharedPostgres.url();
        return url + (url.contains("?") ? "&" : "?") + "ApplicationName=" + application;
    }

    private static JdbcThrottleStore store(javax.sql.DataSource pool, Set<String> databaseOnly) {
        return new JdbcThrottleStore(
                pool,
                "throttle_",
                Duration.ofSeconds(5),
                2,
                null,
                null,
                0,
                JdbcNearCacheSettings.of(1_000, Duration.ofMillis(50), databaseOnly));
    }

    private static SourcedLimiter limiter(JdbcThrottleStore store, dev.throttle.Policy policy) {
        return (SourcedLimiter) store.limiter(policy);
    }

    /** Locks the user out on instance A, and checks that A now refuses them without asking the database. */
    private void lockOutOnA(String user) {
        SourcedLimiter onA = limiter(this.instanceA, LOGIN);
        assertThat(onA.tryAcquireSourced(user, 1).decision().allowed()).isTrue();
        assertThat(onA.tryAcquireSourced(user, 1).source()).isEqualTo(DATABASE);
        assertThat(onA.tryAcquireSourced(user, 1))
                .satisfies((refused) -> assertThat(refused.decision().allowed()).isFalse())
                .satisfies((refused) -> assertThat(refused.source()).isEqualTo(NEAR_CACHE));
    }

    @Test
    void aRefusalAnswersOnTheInstanceUntilAResetOnAnotherInstanceReachesIt() {
        lockOutOnA("alice@example.com");
        this.instanceB.limiter(LOGIN).reset("alice@example.com");
        SourcedLimiter onA = limiter(this.instanceA, LOGIN);
        Eventually.until(
                "the reset made on B lets the user through on A",
                () -> onA.tryAcquireSourced("alice@example.com", 1).decision().allowed());
    }

    @Test
    void aRefundMadeOnAnotherInstanceForgetsTheRefusalRememberedHere() {
        Decision taken = this.instanceB.limiter(EXPORT).tryAcquire("10.0.0.1", 1);
        assertThat(taken.allowed()).isTrue();
        SourcedLimiter onA = limiter(this.instanceA, EXPORT);
        assertThat(onA.tryAcquireSourced("10.0.0.1", 1).source()).isEqualTo(DATABASE);
        assertThat(onA.tryAcquireSourced("10.0.0.1", 1).source())
                .as("remembered on A")
                .isEqualTo(NEAR_CACHE);
        this.instanceB.limiter(EXPORT).refund("10.0.0.1", 1, taken);
        Eventually.until(
                "the unit given back on B is taken on A",
                () -> onA.tryAcquireSourced("10.0.0.1", 1).decision().allowed());
    }

    @Test
    void aRefundCommittedAfterItsCallerStoppedWaitingLeavesNoRefusalStanding() throws Exception {
        try (HikariDataSource pool = SharedPostgres.newDataSource(named("near-cache-impatient"), 4)) {
            JdbcThrottleStore impatient = new JdbcThrottleStore(
                    pool,
                    "throttle_",
                    Duration.ofMillis(300),
                    2,
                    null,
                    null,
                    0,
                    JdbcNearCacheSettings.of(1_000, Duration.ofMillis(50), Set.of()));
            try {
                impatient.eventsHeard().orTimeout(10, TimeUnit.SECONDS).join();
                SourcedLimiter limiter = limiter(impatient, EXPORT);
                Decision taken = limiter.tryAcquire("10.0.0.2", 1);
                assertThat(taken.allowed()).isTrue();
                limiter.tryAcquireSourced("10.0.0.2", 1);
                assertThat(limiter.tryAcquireSourced("10.0.0.2", 1).source()).isEqualTo(NEAR_CACHE);
                try (java.sql.Connection holder = SharedPostgres.dataSource().getConnection()) {
                    // the key's row locked elsewhere: the refund waits for it past its caller's timeout
                    holder.setAutoCommit(false);
                    try (java.sql.Statement statement = holder.createStatement()) {
                        statement
                                .executeQuery("SELECT * FROM throttle_state WHERE policy_name = 'export'"
                                        + " AND limit_key = '10.0.0.2' FOR UPDATE")
                                .close();
                    }
                    org.assertj.core.api.Assertions.assertThatThrownBy(() -> limiter.refund("10.0.0.2", 1, taken))
                            .isInstanceOf(JdbcStoreException.class);
                    // the database still holds the unit taken: this refusal is remembered again
                    assertThat(limiter.tryAcquireSourced("10.0.0.2", 1)
                                    .decision()
                                    .allowed())
                            .isFalse();
                    holder.commit();
                }
                Eventually.until(
                        "the refund, committed once the row was free, lets the next call through",
                        () -> limiter.tryAcquireSourced("10.0.0.2", 1)
                                .decision()
                                .allowed());
            } finally {
                impatient.close();
            }
        }
    }

    @Test
    void aPolicyThatAnswersFromTheDatabaseOnlyIsNeverRefusedFromTheNearCache() {
        TokenBucketPolicy failures = new TokenBucketPolicy("failures", 1, 1, Duration.ofHours(1));
        SourcedLimiter onA = limiter(this.instanceA, failures);
        assertThat(onA.tryAcquireSourced("k", 1).decision().allowed()).isTrue();
        for (int i = 0; i < 3; i++) {
            assertThat(onA.tryAcquireSourced("k", 1))
                    .satisfies((refused) ->
                            assertThat(refused.decision().allowed()).isFalse())
                    .satisfies((refused) -> assertThat(refused.source()).isEqualTo(DATABASE));
        }
        // still remembered, to answer in an outage
        assertThat(((dev.throttle.resilience.RememberedRefusals) onA).rememberedRefusal("k", 1))
                .isNotNull();
    }

    @Test
    void anInstanceWhoseListeningConnectionIsKilledHearsAgainAndMissesNoReset() throws Exception {
        lockOutOnA("bob@example.com");
        assertThat(terminated("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        + " WHERE application_name = 'near-cache-a' AND query LIKE 'SELECT pg_notify%'"))
                .as("A's listening connection killed")
                .isEqualTo(1);
        Eventually.until("A no longer hears the events", () -> !this.instanceA.hearsEvents());
        // the reset may come while A listens again: heard then, or forgotten with everything when it is back
        this.instanceB.limiter(LOGIN).reset("bob@example.com");
        SourcedLimiter onA = limiter(this.instanceA, LOGIN);
        Eventually.until(
                "the user is let through on A",
                () -> onA.tryAcquireSourced("bob@example.com", 1).decision().allowed());
        Eventually.until("A hears the events again", this.instanceA::hearsEvents);
        assertThat(onA.tryAcquireSourced("bob@example.com", 1).source()).isEqualTo(DATABASE);
        assertThat(onA.tryAcquireSourced("bob@example.com", 1).source())
                .as("answered on A again once it hears")
                .isEqualTo(NEAR_CACHE);
    }

    private static int terminated(String sql) throws java.sql.SQLException {
        try (java.sql.Connection connection = SharedPostgres.dataSource().getConnection();
                java.sql.Statement statement = connection.createStatement();
                java.sql.ResultSet rows = statement.executeQuery(sql)) {
            int count = 0;
            while (rows.next()) {
                count++;
            }
            return count;
        }
    }

    @Test
    void onlyAStoreWithTheNearCachePublishesItsResets() throws Exception {
        // a NOTIFY takes PostgreSQL's notification lock at commit: a store whose policies answer from no
        // near cache publishes nothing, so its resets commit side by side
        try (java.sql.Connection listening = SharedPostgres.dataSource().getConnection();
                java.sql.Statement statement = listening.createStatement();
                HikariDataSource poolC = SharedPostgres.newDataSource(2)) {
            statement.execute("LISTEN throttle_events");
            org.postgresql.PGConnection events = listening.unwrap(org.postgresql.PGConnection.class);
            JdbcThrottleStore withoutNearCache =
                    new JdbcThrottleStore(poolC, "throttle_", Duration.ofSeconds(5), 2, null, null, 0);
            try {
                withoutNearCache.limiter(LOGIN).reset("frank@example.com");
            } finally {
                withoutNearCache.close();
            }
            this.instanceB.limiter(LOGIN).reset("heidi@example.com");
            // events arrive in the order their transactions committed: the first key event is B's
            String first = null;
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (first == null && System.nanoTime() < until) {
                org.postgresql.PGNotification[] heard = events.getNotifications(1_000);
                for (int i = 0; heard != null && i < heard.length && first == null; i++) {
                    // a listener's proofs of delivery ("h <nonce>") pass on the same channel
                    if (heard[i].getParameter().startsWith("k ")) {
                        first = heard[i].getParameter();
                    }
                }
            }
            String heidi = java.util.Base64.getUrlEncoder()
                    .withoutPadding()
                    .encodeToString("heidi@example.com".getBytes(java.nio.charset.StandardCharsets.UTF_8));
            assertThat(first).as("the first key event heard").isNotNull().endsWith(" " + heidi);
        }
    }

    @Test
    void aConnectionThatTakesListenButDeliversNothingNeverLetsTheNearCacheAnswer() throws Exception {
        // as behind a pooler in transaction mode: LISTEN is accepted, and no event ever comes back
        try (HikariDataSource pool = SharedPostgres.newDataSource(named("near-cache-deaf"), 3)) {
            JdbcThrottleStore deaf = store(listenIgnored(pool), Set.of());
            try {
                SourcedLimiter limiter = limiter(deaf, LOGIN);
                assertThat(limiter.tryAcquireSourced("grace@example.com", 1)
                                .decision()
                                .allowed())
                        .isTrue();
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                while (System.nanoTime() < until) {
                    assertThat(limiter.tryAcquireSourced("grace@example.com", 1))
                            .satisfies((refused) ->
                                    assertThat(refused.decision().allowed()).isFalse())
                            .satisfies((refused) -> assertThat(refused.source()).isEqualTo(DATABASE));
                    Thread.sleep(100);
                }
                assertThat(deaf.hearsEvents()).isFalse();
                assertThat(deaf.eventsHeard()).isNotDone();
            } finally {
                deaf.close();
            }
        }
    }

    /** Connections on which {@code LISTEN} runs as a {@code SELECT 1}: accepted, and nothing is heard. */
    private static javax.sql.DataSource listenIgnored(HikariDataSource pool) {
        return (javax.sql.DataSource) java.lang.reflect.Proxy.newProxyInstance(
                JdbcNearCacheTests.class.getClassLoader(),
                new Class<?>[] {javax.sql.DataSource.class},
                (proxy, method, args) -> {
                    Object result = invoke(pool, method, args);
                    return (result instanceof java.sql.Connection connection) ? listenIgnored(connection) : result;
                });
    }

    private static java.sql.Connection listenIgnored(java.sql.Connection connection) {
        return (java.sql.Connection) java.lang.reflect.Proxy.newProxyInstance(
                JdbcNearCacheTests.class.getClassLoader(),
                new Class<?>[] {java.sql.Connection.class},
                (proxy, method, args) -> {
                    Object result = invoke(connection, method, args);
                    if (result instanceof java.sql.Statement statement
                            && !(result instanceof java.sql.PreparedStatement)) {
                        return java.lang.reflect.Proxy.newProxyInstance(
                                JdbcNearCacheTests.class.getClassLoader(),
                                new Class<?>[] {java.sql.Statement.class},
                                (inner, call, callArgs) -> {
                                    if (call.getName().equals("execute")
                                            && callArgs != null
                                            && callArgs.length == 1
                                            && String.valueOf(callArgs[0]).startsWith("LISTEN")) {
                                        callArgs = new Object[] {"SELECT 1"};
                                    }
                                    return invoke(statement, call, callArgs);
                                });
                    }
                    return result;
                });
    }

    private static Object invoke(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (java.lang.reflect.InvocationTargetException ex) {
            throw ex.getCause();
        }
    }

    @Test
    void anEventNoInstanceCanReadForgetsEveryRefusal() {
        lockOutOnA("carol@example.com");
        lockOutOnA("dave@example.com");
        SharedPostgres.execute("SELECT pg_notify('throttle_events', 'k not-base64! ')");
        SourcedLimiter onA = limiter(this.instanceA, LOGIN);
        Eventually.until("both asked of the database again", () -> this.instanceA.nearCacheSize() == 0);
        assertThat(onA.tryAcquireSourced("carol@example.com", 1).source()).isEqualTo(DATABASE);
        assertThat(onA.tryAcquireSourced("dave@example.com", 1).source()).isEqualTo(DATABASE);
    }

    @Test
    void aResetOfAKeyTooLongToNameInAnEventForgetsItsWholePolicyEverywhere() {
        // PostgreSQL refuses a payload of 8000 bytes; the store's own keys are hashed past 200 characters,
        // but the store takes any key it is given
        String longKey = "k".repeat(6_000);
        lockOutOnA(longKey);
        this.instanceB.limiter(LOGIN).reset(longKey);
        SourcedLimiter onA = limiter(this.instanceA, LOGIN);
        Eventually.until(
                "the long key is let through on A",
                () -> onA.tryAcquireSourced(longKey, 1).decision().allowed());
    }

    @Test
    void aResetOfAKeyWithSpacesNulAndUnicodeReachesThatKeyAndNoOther() {
        String odd = "a b\0ç 😀 k";
        lockOutOnA(odd);
        lockOutOnA("a b");
        this.instanceB.limiter(LOGIN).reset(odd);
        SourcedLimiter onA = limiter(this.instanceA, LOGIN);
        Eventually.until(
                "the odd key is let through on A",
                () -> onA.tryAcquireSourced(odd, 1).decision().allowed());
        assertThat(onA.tryAcquireSourced("a b", 1).source())
                .as("the other key, still remembered")
                .isEqualTo(NEAR_CACHE);
    }
}
