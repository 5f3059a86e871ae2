package dev.throttle.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.throttle.BoundPolicy;
import dev.throttle.Decision;
import dev.throttle.DecisionSource;
import dev.throttle.SourcedLimiter;
import dev.throttle.Throttler;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.jdbc.JdbcThrottleStore;
import dev.throttle.testing.jdbc.SharedPostgres;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.LocalDate;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * {@code throttle.store.type=jdbc} through the auto-configuration, on Spring Boot's own
 * {@link DataSource} against a real PostgreSQL, and the mistakes that fail the start instead of the
 * first request.
 */
class JdbcStoreAutoConfigurationTests {

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(
                    AutoConfigurations.of(DataSourceAutoConfiguration.class, ThrottleAutoConfiguration.class))
            .withPropertyValues(
                    "throttle.store.type=jdbc",
                    "throttle.store.jdbc.timeout=3s",
                    "throttle.policies.api.algorithm=gcra",
                    "throttle.policies.api.limit=2",
                    "throttle.policies.api.period=1m");

    /** A prefix of the test's own, so that each test starts without the schema. */
    private static String freshPrefix() {
        return "t" + UUID.randomUUID().toString().replace("-", "").substring(0, 10) + "_";
    }

    @Test
    void decisionsLiveInTheDatabaseWithTheDefaultFailureModeLocalOnceTheSchemaIsCreated() {
        String prefix = freshPrefix();
        this.contextRunner
                .withPropertyValues(
                        "spring.datasource.url=" + SharedPostgres.url(),
                        "throttle.store.jdbc.initialize-schema=always",
                        "throttle.store.jdbc.table-prefix=" + prefix)
                .run((context) -> {
                    assertThat(context).hasNotFailed().hasSingleBean(ResilientThrottleStore.class);
                    ResilientThrottleStore store = context.getBean(ResilientThrottleStore.class);
                    assertThat(store.kind()).isEqualTo("jdbc");
                    assertThat(store.failureMode()).isEqualTo(FailureMode.LOCAL);
                    Throttler throttler = context.getBean(Throttler.class);
                    assertThat(throttler.tryAcquire("api", "alice").allowed()).isTrue();
                    assertThat(throttler.tryAcquire("api", "alice").allowed()).isTrue();
                    assertThat(throttler.tryAcquire("api", "alice").allowed()).isFalse();
                    assertThat(rows(context.getBean(DataSource.class), prefix, "api", "alice"))
                            .isEqualTo(1);
                });
    }

    @Test
    void theSchemaIsCreatedAgainWithoutHarmAtTheNextStart() {
        String prefix = freshPrefix();
        ApplicationContextRunner runner = this.contextRunner.withPropertyValues(
                "spring.datasource.url=" + SharedPostgres.url(),
                "throttle.store.jdbc.initialize-schema=always",
                "throttle.store.jdbc.table-prefix=" + prefix);
        runner.run((context) -> assertThat(context.getBean(Throttler.class)
                        .tryAcquire("api", "bob")
                        .allowed())
                .isTrue());
        runner.run((context) -> {
            assertThat(context).hasNotFailed();
            Throttler throttler = context.getBean(Throttler.class);
            assertThat(throttler.tryAcquire("api", "bob").allowed())
                    .as("the second of two")
                    .isTrue();
            assertThat(throttler.tryAcquire("api", "bob").allowed()).isFalse();
        });
    }

    @Test
    void aMissingSchemaFailsTheStartSayingHowToCreateIt() {
        this.contextRunner
                .withPropertyValues(
                        "spring.datasource.url=" + SharedPostgres.url(),
                        "throttle.store.jdbc.initialize-schema=never",
                        "throttle.store.jdbc.table-prefix=" + freshPrefix())
                .run((context) -> {
                    assertThat(context).hasFailed();
                    assertThat(analysis(context.getStartupFailure()).getDescription())
                            .contains("the database has no table t")
                            .contains("initialize-schema=never")
                            .contains("initialize-schema=always")
                            .contains("META-INF/throttle/jdbc/schema-postgresql.sql");
                });
    }

    @Test
    void theDefaultInitializeSchemaCreatesNothingOnPostgresql() {
        this.contextRunner
                .withPropertyValues(
                        "spring.datasource.url=" + SharedPostgres.url(),
                        "throttle.store.jdbc.table-prefix=" + freshPrefix())
                .run((context) -> assertThat(
                                analysis(context.getStartupFailure()).getDescription())
                        .contains("initialize-schema=embedded"));
    }

    @Test
    void aDatabaseOtherThanPostgresqlFailsTheStart() {
        this.contextRunner
                .withPropertyValues("spring.datasource.url=jdbc:h2:mem:not-postgres")
                .run((context) -> assertThat(
                                analysis(context.getStartupFailure()).getDescription())
                        .contains("runs on PostgreSQL, but the DataSource connects to H2"));
    }

    @Test
    void noDataSourceFailsTheStartSayingWhatToAdd() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(ThrottleAutoConfiguration.class))
                .withPropertyValues("throttle.store.type=jdbc")
                .run((context) -> assertThat(
                                analysis(context.getStartupFailure()).getDescription())
                        .contains("throttle.store.type=jdbc needs one DataSource bean (found 0)")
                        .contains("spring.datasource.url"));
    }

    @Test
    void aPolicyThatWaitsStartsOnTheJdbcStoreAndAWaitingCallGetsALaterTurn() {
        this.contextRunner
                .withPropertyValues(
                        "spring.datasource.url=" + SharedPostgres.url(),
                        "throttle.policies.waits.algorithm=gcra",
                        "throttle.policies.waits.limit=1",
                        "throttle.policies.waits.period=1m",
                        "throttle.policies.waits.wait=2m")
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    dev.throttle.Throttler throttler = context.getBean(dev.throttle.Throttler.class);
                    String key = "waiter-" + System.nanoTime();
                    assertThat(throttler
                                    .bound("waits")
                                    .reserve(key, 1, java.time.Duration.ofMinutes(2))
                                    .waitMillis())
                            .isZero();
                    assertThat(throttler
                                    .bound("waits")
                                    .reserve(key, 1, java.time.Duration.ofMinutes(2))
                                    .waitMillis())
                            .as("the next turn, a minute away, reserved in the database")
                            .isBetween(50_000L, 60_000L);
                });
    }

    @Test
    void aMonthlyBudgetFromABillingDayRunsOnTheDatabasesClockToTheRealBoundary() {
        this.contextRunner
                .withPropertyValues(
                        "spring.datasource.url=" + SharedPostgres.url(),
                        "throttle.policies.tokens.algorithm=fixed-window",
                        "throttle.policies.tokens.limit=1",
                        "throttle.policies.tokens.window=1M",
                        "throttle.policies.tokens.zone=Europe/Berlin",
                        "throttle.policies.tokens.anchor-day=15")
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    BoundPolicy tokens = context.getBean(Throttler.class).bound("tokens");
                    String key = "customer-" + UUID.randomUUID();
                    assertThat(tokens.tryAcquire(key, 1).allowed()).isTrue();
                    Decision refused = tokens.tryAcquire(key, 1);
                    ZoneId berlin = ZoneId.of("Europe/Berlin");
                    ZonedDateTime now = ZonedDateTime.now(berlin);
                    LocalDate fifteenth = now.toLocalDate().withDayOfMonth(15);
                    LocalDate next = now.getDayOfMonth() >= 15 ? fifteenth.plusMonths(1) : fifteenth;
                    long untilNext =
                            Duration.between(now, next.atStartOfDay(berlin)).toMillis();
                    assertThat(refused.allowed()).isFalse();
                    assertThat(refused.retryAfterMillis())
                            .as("until the next 15th at midnight in Berlin, on the database's clock")
                            .isCloseTo(untilNext, within(5_000L));
                    assertThat(tokens.anchorDay(1).tryAcquire("other-" + key, 1).resetAfterMillis())
                            .as("a customer billed on the 1st: to the next 1st")
                            .isCloseTo(
                                    Duration.between(
                                                    now,
                                                    now.toLocalDate()
                                                            .withDayOfMonth(1)
                                                            .plusMonths(1)
                                                            .atStartOfDay(berlin))
                                            .toMillis(),
                                    within(5_000L));
                });
    }

    @Test
    void aConcurrencyPolicyHoldsItsSlotsInTheDatabaseAndAReleaseByReceiptFreesOne() {
        this.contextRunner
                .withPropertyValues(
                        "spring.datasource.url=" + SharedPostgres.url(),
                        "throttle.policies.reports.algorithm=concurrency",
                        "throttle.policies.reports.limit=2",
                        "throttle.policies.reports.lease=30s")
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    BoundPolicy reports = context.getBean(Throttler.class).bound("reports");
                    String key = "10.0.0.1-" + UUID.randomUUID();
                    Decision first = reports.tryAcquire(key, 1);
                    assertThat(first.allowed()).isTrue();
                    assertThat(reports.tryAcquire(key, 1).allowed()).isTrue();
                    Decision third = reports.tryAcquire(key, 1);
                    assertThat(third.allowed()).as("two slots held").isFalse();
                    assertThat(third.retryAfterMillis())
                            .as("a hint of one second")
                            .isEqualTo(1_000);
                    reports.refund(key, 1, first);
                    reports.refund(key, 1, first);
                    assertThat(reports.peek(key).remaining())
                            .as("the first slot freed once, the second release freeing nothing")
                            .isEqualTo(1);
                    try (Connection connection =
                                    context.getBean(DataSource.class).getConnection();
                            Statement statement = connection.createStatement();
                            ResultSet row = statement.executeQuery("SELECT cardinality(state) FROM throttle_state"
                                    + " WHERE policy_name = 'reports' AND limit_key = '" + key + "'")) {
                        assertThat(row.next()).isTrue();
                        assertThat(row.getInt(1))
                                .as("{length, last id, the one slot held}")
                                .isEqualTo(3);
                    }
                });
    }

    @Test
    void anInvalidTablePrefixFailsTheStartNamingTheProperty() {
        this.contextRunner
                .withPropertyValues(
                        "spring.datasource.url=" + SharedPostgres.url(), "throttle.store.jdbc.table-prefix=Throttle-")
                .run((context) -> assertThat(
                                analysis(context.getStartupFailure()).getDescription())
                        .contains("throttle.store.jdbc.table-prefix must be"));
    }

    @Test
    void theNearCacheIsOffByDefault() {
        this.contextRunner
                .withPropertyValues("spring.datasource.url=" + SharedPostgres.url())
                .run((context) -> assertThat(
                                jdbcStore(context).nearCacheSettings().isEnabled())
                        .isFalse());
    }

    @Test
    void anEnabledNearCacheAnswersRefusalsOnTheInstanceButNotOfPoliciesThatCountOnlyFailures() {
        SharedPostgres.clear();
        this.contextRunner
                .withPropertyValues(
                        "spring.datasource.url=" + SharedPostgres.url(),
                        "throttle.store.jdbc.near-cache.enabled=true",
                        "throttle.policies.login.algorithm=lockout",
                        "throttle.policies.login.timeouts=1h",
                        "throttle.policies.login.count=failures",
                        "throttle.policies.quiet.algorithm=gcra",
                        "throttle.policies.quiet.limit=1",
                        "throttle.policies.quiet.period=1h",
                        "throttle.policies.quiet.near-cache=false")
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    JdbcThrottleStore store = jdbcStore(context);
                    store.eventsHeard().get(10, java.util.concurrent.TimeUnit.SECONDS);
                    Throttler throttler = context.getBean(Throttler.class);
                    assertThat(store.nearCacheSettings().answersFor(throttler.policy("api")))
                            .isTrue();
                    assertThat(store.nearCacheSettings().answersFor(throttler.policy("login")))
                            .as("count: failures")
                            .isFalse();
                    assertThat(store.nearCacheSettings().answersFor(throttler.policy("quiet")))
                            .as("near-cache: false")
                            .isFalse();
                    throttler.tryAcquire("api", "erin");
                    throttler.tryAcquire("api", "erin");
                    assertThat(throttler.tryAcquire("api", "erin").allowed()).isFalse();
                    SourcedLimiter limiter = (SourcedLimiter) context.getBean(ResilientThrottleStore.class)
                            .store()
                            .limiter(throttler.policy("api"));
                    assertThat(limiter.tryAcquireSourced("erin", 1).source())
                            .isEqualTo(DecisionSource.nearCache("jdbc"));
                });
    }

    @Test
    void aNearCacheOfNoKeysFailsTheStartNamingTheProperty() {
        this.contextRunner
                .withPropertyValues(
                        "spring.datasource.url=" + SharedPostgres.url(),
                        "throttle.store.jdbc.near-cache.enabled=true",
                        "throttle.store.jdbc.near-cache.maximum-keys=0")
                .run((context) -> assertThat(
                                analysis(context.getStartupFailure()).getDescription())
                        .contains("throttle.store.jdbc.near-cache.maximum-keys must be at least 1"));
    }

    private static JdbcThrottleStore jdbcStore(org.springframework.context.ApplicationContext context) {
        return (JdbcThrottleStore) context.getBean(ResilientThrottleStore.class).store();
    }

    @Test
    void aDatabaseDownAtStartupIsNoStartupFailureTheFailureModeAnswers() {
        this.contextRunner
                .withPropertyValues(
                        // nothing listens on port 1
                        "spring.datasource.url=jdbc:postgresql://127.0.0.1:1/none",
                        "spring.datasource.hikari.connection-timeout=250",
                        "throttle.store.jdbc.failure-mode=closed",
                        "throttle.store.jdbc.timeout=300ms")
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(Throttler.class)
                                    .tryAcquire("api", "carol")
                                    .allowed())
                            .isFalse();
                });
    }

    private static FailureAnalysis analysis(Throwable failure) {
        Throwable cause = failure;
        while (cause != null && !(cause instanceof ThrottleConfigurationException)) {
            cause = cause.getCause();
        }
        assertThat(cause)
                .as("a ThrottleConfigurationException among the causes of " + failure)
                .isNotNull();
        FailureAnalysis analysis = new ThrottleConfigurationFailureAnalyzer().analyze(failure);
        assertThat(analysis).isNotNull();
        return analysis;
    }

    private static int rows(DataSource dataSource, String prefix, String policy, String key) throws Exception {
        try (Connection connection = dataSource.getConnection();
                PreparedStatement statement = connection.prepareStatement("SELECT count(*) FROM " + prefix
                        + "state WHERE policy_name = ? AND limit_key = ? AND expires_at > 0")) {
            statement.setString(1, policy);
            statement.setString(2, key);
            try (ResultSet result = statement.executeQuery()) {
                result.next();
                return result.getInt(1);
            }
        }
    }
}
