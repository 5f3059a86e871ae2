package dev.throttle.spring.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Limiter;
import dev.throttle.Throttler;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.resilience.RememberedRefusals;
import dev.throttle.testing.Eventually;
import dev.throttle.testing.jdbc.SharedPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What the jdbc store does beyond the store contract: keys PostgreSQL's text cannot hold as they
 * are, refusals that do not wait for a key's row lock, the purge of expired rows, and its settings.
 */
class JdbcThrottleStoreTests {

    @BeforeEach
    void clear() {
        SharedPostgres.clear();
    }

    @Test
    void keysWithANulOrABackslashKeepRowsOfTheirOwn() {
        try (JdbcThrottleStore store = new JdbcThrottleStore(SharedPostgres.dataSource())) {
            Limiter limiter = store.limiter(TokenBucketPolicy.of("one", 1, Duration.ofHours(1)));
            String[] keys = {"a\u0000b", "a\\0b", "a\\\\0b", "a0b", "\u0000"};
            for (String key : keys) {
                assertThat(limiter.tryAcquire(key, 1).allowed()).as(key).isTrue();
            }
            for (String key : keys) {
                assertThat(limiter.tryAcquire(key, 1).allowed()).as(key).isFalse();
            }
            limiter.reset("a\u0000b");
            assertThat(limiter.tryAcquire("a\u0000b", 1).allowed()).isTrue();
            assertThat(limiter.tryAcquire("a\\0b", 1).allowed()).isFalse();
        }
    }

    @Test
    void keysThatUtf8WouldMergeKeepRowsOfTheirOwn() {
        // a lone surrogate has no UTF-8 form: the driver writes it as '?', so these were one row
        try (JdbcThrottleStore store = new JdbcThrottleStore(SharedPostgres.dataSource())) {
            Throttler throttler = new Throttler(store, List.of(TokenBucketPolicy.of("login", 1, Duration.ofHours(1))));
            String[] keys = {"sur\ud800@x.com", "sur\udbff@x.com", "sur?@x.com"};
            for (String key : keys) {
                assertThat(throttler.tryAcquire("login", key, 1).allowed())
                        .as(key)
                        .isTrue();
            }
            for (String key : keys) {
                assertThat(throttler.tryAcquire("login", key, 1).allowed())
                        .as(key)
                        .isFalse();
            }
        }
    }

    @Test
    void theDatabasesRefusalsAreRememberedForAnOutageUntilTheKeyIsAllowedGivenBackOrReset() throws Exception {
        try (JdbcThrottleStore store = new JdbcThrottleStore(SharedPostgres.dataSource())) {
            Limiter limiter = store.limiter(TokenBucketPolicy.of("one", 1, Duration.ofHours(1)));
            RememberedRefusals remembered = (RememberedRefusals) limiter;
            Decision taken = limiter.tryAcquire("sync", 1);
            assertThat(remembered.rememberedRefusal("sync", 1)).isNull();
            assertThat(limiter.tryAcquire("sync", 1).allowed()).isFalse();
            assertThat(remembered.rememberedRefusal("sync", 1).retryAfterMillis())
                    .isGreaterThan(Duration.ofMinutes(59).toMillis());
            assertThat(remembered.rememberedRefusal("sync", 2))
                    .as("another cost")
                    .isNull();
            limiter.refund("sync", 1, taken);
            assertThat(remembered.rememberedRefusal("sync", 1)).as("given back").isNull();

            assertThat(limiter.tryAcquireAsync("async", 1)
                            .toCompletableFuture()
                            .get()
                            .allowed())
                    .isTrue();
            assertThat(limiter.tryAcquireAsync("async", 1)
                            .toCompletableFuture()
                            .get()
                            .allowed())
                    .isFalse();
            assertThat(remembered.rememberedRefusal("async", 1)).isNotNull();
            limiter.resetAsync("async").toCompletableFuture().get();
            assertThat(remembered.rememberedRefusal("async", 1)).as("reset").isNull();

            Limiter other = store.limiter(TokenBucketPolicy.of("one", 2, Duration.ofHours(1)));
            assertThat(other.tryAcquire("async", 1).allowed()).isTrue();
            assertThat(other.tryAcquire("async", 1).allowed()).isTrue();
            assertThat(other.tryAcquire("async", 1).allowed()).isFalse();
            assertThat(((RememberedRefusals) other).rememberedRefusal("async", 1))
                    .isNotNull();
            assertThat(remembered.rememberedRefusal("async", 1))
                    .as("another limiter of the name (a plan) answers none of it")
                    .isNull();
            limiter.reset("async");
            assertThat(((RememberedRefusals) other).rememberedRefusal("async", 1))
                    .as("a reset by any limiter of the name forgets it")
                    .isNull();
        }
    }

    @Test
    void aRefusalIsAnsweredWhileAnotherCallHoldsTheKeysRowLockAndAnAllowedCallWaitsForIt() throws Exception {
        FixedWindowPolicy window = new FixedWindowPolicy("window", 1, Duration.ofHours(1));
        TokenBucketPolicy bucket = TokenBucketPolicy.of("bucket", 2, Duration.ofHours(1));
        try (JdbcThrottleStore store = new JdbcThrottleStore(
                        SharedPostgres.dataSource(), "throttle_", Duration.ofSeconds(2), 2, null, null, 0);
                Connection holder = SharedPostgres.dataSource().getConnection();
                Statement statement = holder.createStatement()) {
            assertThat(store.limiter(window).tryAcquire("k", 1).allowed()).isTrue();
            assertThat(store.limiter(bucket).tryAcquire("k", 1).allowed()).isTrue();
            holder.setAutoCommit(false);
            // a transaction holds both rows' locks, as a decision on them does while it runs
            statement.execute("SELECT 1 FROM throttle_state FOR UPDATE");
            try {
                assertThat(store.limiter(window).tryAcquire("k", 1).allowed())
                        .as("a refusal, answered from the row as last committed")
                        .isFalse();
                assertThatExceptionOfType(JdbcStoreException.class)
                        .as("a call the row allows is decided on the locked row: it waits, here past the timeout")
                        .isThrownBy(() -> store.limiter(bucket).tryAcquire("k", 1));
            } finally {
                holder.rollback();
            }
        }
    }

    @Test
    void anAllowedCallWhoseRowAnotherCallWroteAfterItsReadIsDecidedAgainOnTheRowAsWritten() throws Exception {
        FixedWindowPolicy window = new FixedWindowPolicy("window", 2, Duration.ofHours(1));
        ExecutorService caller = Executors.newSingleThreadExecutor();
        try (JdbcThrottleStore store = new JdbcThrottleStore(
                        SharedPostgres.dataSource(), "throttle_", Duration.ofSeconds(20), 2, null, null, 0);
                Connection holder = SharedPostgres.dataSource().getConnection();
                Statement statement = holder.createStatement()) {
            Limiter limiter = store.limiter(window);
            assertThat(limiter.tryAcquire("k", 1).allowed()).isTrue();
            // what a key holds after both of its calls
            limiter.tryAcquire("both", 1);
            limiter.tryAcquire("both", 1);
            holder.setAutoCommit(false);
            statement.execute("SELECT 1 FROM throttle_state WHERE limit_key = 'k' FOR UPDATE");
            // the call reads one of two taken, which allows it, and waits to write over what it read
            Future<Decision> second = caller.submit(() -> limiter.tryAcquire("k", 1));
            Eventually.until("the call waits for the row's lock", () -> callsWaitingForALock() == 1);
            // meanwhile another instance's call takes the second
            statement.execute("UPDATE throttle_state SET state = b.state, expires_at = b.expires_at"
                    + " FROM throttle_state b WHERE throttle_state.limit_key = 'k' AND b.limit_key = 'both'");
            holder.commit();
            assertThat(second.get(20, TimeUnit.SECONDS).allowed())
                    .as("decided again on the row as the other call wrote it")
                    .isFalse();
            assertThat(limiter.peek("k").remaining()).isZero();
        } finally {
            caller.shutdownNow();
        }
    }

    @Test
    void thePurgeDeletesExpiredRowsOnTheDatabasesClockInBatchesAndKeepsTheLiveOnes() throws Exception {
        FixedWindowPolicy window = new FixedWindowPolicy("window", 5, Duration.ofMinutes(1));
        // a store whose clock is two minutes behind writes rows that expired a minute ago on the database's
        try (JdbcThrottleStore behind = new JdbcThrottleStore(
                        SharedPostgres.dataSource(),
                        "throttle_",
                        Duration.ofSeconds(3),
                        2,
                        () -> System.currentTimeMillis() - 120_000,
                        null,
                        0);
                JdbcThrottleStore store = new JdbcThrottleStore(SharedPostgres.dataSource())) {
            for (int i = 0; i < 5; i++) {
                behind.limiter(window).tryAcquire("old-" + i, 1);
            }
            store.limiter(window).tryAcquire("live", 1);
            assertThat(rows()).isEqualTo(6);
            assertThat(store.purgeExpired(2)).isEqualTo(2);
            assertThat(store.purgeExpired(2)).isEqualTo(2);
            assertThat(store.purgeExpired(2)).isEqualTo(1);
            assertThat(store.purgeExpired(2)).isZero();
            assertThat(rows()).isEqualTo(1);
            assertThat(store.limiter(window).peek("live").remaining()).isEqualTo(4);
        }
    }

    @Test
    void invalidSettingsNameTheirProperty() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new JdbcThrottleStore(
                        SharedPostgres.dataSource(), "throttle_", Duration.ZERO, 1, null, null, 0))
                .withMessageContaining("throttle.store.jdbc.timeout");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new JdbcThrottleStore(
                        SharedPostgres.dataSource(), "throttle_", Duration.ofSeconds(1), 0, null, null, 0))
                .withMessageContaining("throttle.store.jdbc.max-connections");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new JdbcThrottleStore(
                        SharedPostgres.dataSource(), "x; drop table y", Duration.ofSeconds(1), 1, null, null, 0))
                .withMessageContaining("throttle.store.jdbc.table-prefix");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new JdbcThrottleStore(
                        SharedPostgres.dataSource(),
                        "throttle_",
                        Duration.ofSeconds(1),
                        1,
                        null,
                        Duration.ofMinutes(1),
                        0))
                .withMessageContaining("throttle.store.jdbc.purge-batch-size");
    }

    private static long callsWaitingForALock() {
        try (Connection connection = SharedPostgres.dataSource().getConnection();
                Statement statement = connection.createStatement();
                ResultSet result = statement.executeQuery("SELECT count(*) FROM pg_stat_activity"
                        + " WHERE wait_event_type = 'Lock' AND query LIKE '%throttle_decide%'")) {
            result.next();
            return result.getLong(1);
        } catch (SQLException ex) {
            throw new IllegalStateException(ex);
        }
    }

    private static long rows() throws Exception {
        try (Connection connection = SharedPostgres.dataSource().getConnection();
                Statement statement = connection.createStatement();
                ResultSet result = statement.executeQuery("SELECT count(*) FROM throttle_state")) {
            result.next();
            return result.getLong(1);
        }
    }
}
