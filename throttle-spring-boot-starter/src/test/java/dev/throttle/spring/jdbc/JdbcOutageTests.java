package dev.throttle.spring.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.throttle.SourcedDecision;
import dev.throttle.SourcedLimiter;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.testing.Eventually;
import dev.throttle.testing.jdbc.SharedPostgres;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
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
        this.postgres = start(port);
        this.pool = SharedPostgres.newDataSource(SharedPostgres.urlOf(this.postgres), 4);
        // the pool would wait 1 s for a connection: longer than the store's timeout
        this.pool.setConnectionTimeout(1_000);
        JdbcSchema.create(this.pool, "throttle_");
        JdbcThrottleStore jdbc = new JdbcThrottleStore(this.pool, "throttle_", TIMEOUT, 4, null, null, 0);
        this.store = ResilientThrottleStore.of(jdbc, FailureMode.CLOSED, 1_000);
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
