package dev.throttle.spring.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.FixedWindowPolicy;
import dev.throttle.Limiter;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.testing.jdbc.SharedPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * Clock skew between application servers changes nothing, because decisions are made on the
 * database's clock ({@code clock_timestamp()}).
 *
 * <p>The first test shows what skew would do if application clocks were used: two stores handed
 * clocks 10 s apart share a 5 s window and let through twice its limit. The second runs two
 * applications whose {@code TimeSource} beans (the clock the rest of the starter uses) are 10 s
 * ahead and 10 s behind, each with the auto-configured store: they decide as one, and the window the
 * database holds starts at the database's time.
 */
class JdbcClockSkewTests {

    private static final long SKEW = Duration.ofSeconds(10).toMillis();

    private static final FixedWindowPolicy WINDOW = new FixedWindowPolicy("window", 3, Duration.ofSeconds(5));

    private final ApplicationContextRunner application = new ApplicationContextRunner()
            .withConfiguration(
                    AutoConfigurations.of(DataSourceAutoConfiguration.class, ThrottleAutoConfiguration.class))
            .withPropertyValues(
                    "spring.datasource.url=" + SharedPostgres.url(),
                    "throttle.store.type=jdbc",
                    "throttle.store.jdbc.timeout=3s",
                    "throttle.store.jdbc.initialize-schema=always",
                    "throttle.policies.window.algorithm=fixed-window",
                    "throttle.policies.window.limit=3",
                    "throttle.policies.window.window=5s");

    @BeforeEach
    void clear() {
        SharedPostgres.clear();
    }

    @Test
    void hadApplicationClocksBeenUsedATenSecondSkewWouldLetTwiceTheLimitThrough() {
        TimeSource accurate = System::currentTimeMillis;
        TimeSource ahead = () -> System.currentTimeMillis() + SKEW;
        try (JdbcThrottleStore a = clientClockStore(accurate);
                JdbcThrottleStore b = clientClockStore(ahead)) {
            Limiter onA = a.limiter(WINDOW);
            Limiter onB = b.limiter(WINDOW);
            int passed = 0;
            for (int i = 0; i < 3; i++) {
                passed += onA.tryAcquire("k", 1).allowed() ? 1 : 0;
            }
            for (int i = 0; i < 3; i++) {
                passed += onB.tryAcquire("k", 1).allowed() ? 1 : 0;
            }
            assertThat(passed).as("B's clock sees A's window as ended").isEqualTo(6);
        }
    }

    private static JdbcThrottleStore clientClockStore(TimeSource clock) {
        return new JdbcThrottleStore(
                SharedPostgres.dataSource(), "throttle_", Duration.ofSeconds(3), 2, clock, null, 0);
    }

    @Test
    void applicationsTenSecondsAheadAndBehindDecideAsOneOnTheDatabasesClock() {
        TimeSource ahead = () -> System.currentTimeMillis() + SKEW;
        TimeSource behind = () -> System.currentTimeMillis() - SKEW;
        this.application
                .withBean(TimeSource.class, () -> ahead)
                .run((first) -> this.application
                        .withBean(TimeSource.class, () -> behind)
                        .run((second) -> {
                            Throttler a = first.getBean(Throttler.class);
                            Throttler b = second.getBean(Throttler.class);
                            assertThat(a.tryAcquire("window", "k").allowed()).isTrue();
                            assertThat(b.tryAcquire("window", "k").allowed()).isTrue();
                            assertThat(a.tryAcquire("window", "k").allowed()).isTrue();
                            assertThat(b.tryAcquire("window", "k").allowed()).isFalse();
                            assertThat(a.tryAcquire("window", "k").allowed()).isFalse();
                            long[] startAndNow = windowStartAndDatabaseNow();
                            assertThat(startAndNow[1] - startAndNow[0])
                                    .as("the window starts at the database's time, not 10 s off it")
                                    .isBetween(0L, 4_000L);
                        }));
    }

    private static long[] windowStartAndDatabaseNow() throws Exception {
        try (Connection connection = SharedPostgres.dataSource().getConnection();
                Statement statement = connection.createStatement();
                ResultSet result = statement.executeQuery("SELECT state[3], "
                        + "floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint FROM throttle_state "
                        + "WHERE policy_name = 'window' AND limit_key = 'k'")) {
            assertThat(result.next()).isTrue();
            return new long[] {result.getLong(1), result.getLong(2)};
        }
    }
}
