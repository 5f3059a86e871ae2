package dev.throttle.spring.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.throttle.DecisionSource;
import dev.throttle.LockoutPolicy;
import dev.throttle.SourcedDecision;
import dev.throttle.SourcedLimiter;
import dev.throttle.TimeSource;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.testing.Eventually;
import dev.throttle.testing.jdbc.SharedPostgres;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The database stopped under load: every call is answered by the failure mode within the timeout
 * (never waiting on the pool's own, longer, connection timeout), and once the database is back the
 * store decides again, without a restart. A PostgreSQL of the test's own, which it stops and starts
 * again on the same port and data.
 */
class JdbcOutageTests {

    private static final Duration TIMEOUT = Duration.ofMillis(500);

    /** What a call may take beyond the timeout on two busy shared cores. */
    private static final long SLACK_MILLIS = 400;

    @TempDir
    Path data;

    private EmbeddedPostgres postgres;

    private HikariDataSource pool;

    private ResilientThrottleStore store;

    @AfterEach
    void stop() throws IOException {
        if (this.store != null) {
            this.store.close();
        }
        if (this.pool != null) {
            this.pool.close();
        }
        if (this.postgres != null) {
            this.postgres.close();
        }
    }

    @Test
    void aDatabaseStoppedMidLoadIsAnsweredByTheFailureModeWithinTheTimeoutAndRecoversWithoutRestart() throws Exception {
        int port = freePort();
        this.store = ResilientThrottleStore.of(startDatabaseAndStore(port), FailureMode.CLOSED, 1_000);
        SourcedLimiter limiter =
                (SourcedLimiter) this.store.limiter(TokenBucketPolicy.of("api", 1_000_000, Duration.ofSeconds(1)));

        for (int i = 0; i < 20; i++) {
            SourcedDecision decided = limiter.tryAcquireSourced("k", 1);
            assertThat(decided.decision().allowed()).isTrue();
            assertThat(decided.source().isFailureMode()).isFalse();
        }

        this.postgres.close();
        this.postgres = null;
        long slowest = 0;
        int refused = 0;
        long until = System.nanoTime() + Duration.ofSeconds(3).toNanos();
        while (System.nanoTime() - until < 0) {
            long start = System.nanoTime();
            SourcedDecision decided = limiter.tryAcquireSourced("k", 1);
            slowest = Math.max(
                    slowest, Duration.ofNanos(System.nanoTime() - start).toMillis());
            if (decided.source().isFailureMode()) {
                assertThat(decided.decision().allowed())
                        .as("failure mode closed")
                        .isFalse();
                refused++;
            }
        }
        assertThat(refused).as("calls answered by the failure mode").isGreaterThan(0);
        assertThat(slowest)
                .as("the slowest call during the outage, ms")
                .isLessThanOrEqualTo(TIMEOUT.toMillis() + SLACK_MILLIS);
        assertThat(this.store.isStoreDown()).isTrue();

        this.postgres = start(port);
        Eventually.until("the store decides again", () -> {
            SourcedDecision decided = limiter.tryAcquireSourced("k", 1);
            return !decided.source().isFailureMode() && decided.decision().allowed();
        });
        assertThat(this.store.isStoreDown()).isFalse();
    }

    /**
     * A key the database locked out stays locked out through an outage, under a failure mode that lets
     * unknown keys through: the refusal this instance was given answers, with its time left, before
     * the local fallback would start the key afresh; a reset during the outage unlocks it here at once.
     */
    @Test
    void aKeyTheDatabaseLockedOutStaysLockedOutThroughAnOutageUnderTheLocalFailureMode() throws Exception {
        this.store = new ResilientThrottleStore(
                startDatabaseAndStore(freePort()),
                FailureMode.LOCAL,
                new MemoryThrottleStore(TimeSource.system(), 1_000),
                TimeSource.system());
        SourcedLimiter login =
                (SourcedLimiter) this.store.limiter(LockoutPolicy.of("login", List.of(Duration.ofMinutes(10))));
        assertThat(login.tryAcquire("mallory", 1).allowed()).isTrue();
        SourcedDecision lockedOut = login.tryAcquireSourced("mallory", 1);
        assertThat(lockedOut.decision().allowed()).isFalse();
        assertThat(lockedOut.source())
                .as("the database decides while it answers")
                .isEqualTo(DecisionSource.store("jdbc"));

        this.postgres.close();
        this.postgres = null;
        long retry = Long.MAX_VALUE;
        for (int i = 0; i < 5; i++) {
            SourcedDecision answer = login.tryAcquireSourced("mallory", 1);
            assertThat(answer.decision().allowed())
                    .as("the local fallback would have let mallory in")
                    .isFalse();
            assertThat(answer.source()).isEqualTo(DecisionSource.nearCache("jdbc"));
            assertThat(answer.decision().retryAfterMillis())
                    .isLessThanOrEqualTo(retry)
                    .isGreaterThan(Duration.ofMinutes(9).toMillis());
            retry = answer.decision().retryAfterMillis();
        }
        assertThat(this.store.isStoreDown()).isTrue();
        SourcedDecision unknown = login.tryAcquireSourced("alice", 1);
        assertThat(unknown.decision().allowed())
                .as("a key nothing is known about")
                .isTrue();
        assertThat(unknown.source()).isEqualTo(DecisionSource.store("local"));
        login.reset("mallory");
        SourcedDecision afterReset = login.tryAcquireSourced("mallory", 1);
        assertThat(afterReset.source().isNearCache()).isFalse();
        assertThat(afterReset.decision().allowed())
                .as("unlocked on this instance")
                .isTrue();
    }

    /** A PostgreSQL of the test's own on {@code port}, with the schema, and a jdbc store on it. */
    private JdbcThrottleStore startDatabaseAndStore(int port) throws Exception {
        this.postgres = start(port);
        this.pool = SharedPostgres.newDataSource(SharedPostgres.urlOf(this.postgres), 4);
        // the pool would wait 1 s for a connection: longer than the store's timeout
        this.pool.setConnectionTimeout(1_000);
        JdbcSchema.create(this.pool, "throttle_");
        return new JdbcThrottleStore(this.pool, "throttle_", TIMEOUT, 4, null, null, 0);
    }

    private EmbeddedPostgres start(int port) throws IOException {
        return EmbeddedPostgres.builder()
                .setPort(port)
                .setDataDirectory(this.data)
                .setCleanDataDirectory(false)
                .start();
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }
}
