package dev.throttle.spring.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.testing.jdbc.SharedPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.web.client.RestClient;

/**
 * Two instances of an application on one real PostgreSQL database, calling one real local HTTP server
 * through a client that honours remote limits: after the first 429 that instance A receives, instance
 * B does not call the server until the pause ends (the database's clock ends it for both), and then
 * does. The pause is one row of {@code throttle_remote_pauses}.
 */
class JdbcRemotePausesTests {

    private CountingServer server;

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class Instance {}

    @BeforeEach
    void start() throws Exception {
        SharedPostgres.clear();
        SharedPostgres.execute("TRUNCATE throttle_remote_pauses");
        this.server = new CountingServer();
    }

    @AfterEach
    void stop() {
        this.server.close();
    }

    private ConfigurableApplicationContext instance(String... more) {
        return new SpringApplicationBuilder(Instance.class)
                .properties(
                        "spring.main.web-application-type=none",
                        "spring.main.banner-mode=off",
                        "spring.datasource.url=" + SharedPostgres.url(),
                        "throttle.store.type=jdbc",
                        "throttle.store.jdbc.timeout=3s",
                        "throttle.policies.upstream.algorithm=gcra",
                        "throttle.policies.upstream.limit=100",
                        "throttle.policies.upstream.period=1s",
                        "throttle.clients.quotes.base-url=" + this.server.url(),
                        "throttle.clients.quotes.policy=upstream",
                        "throttle.clients.quotes.honor-remote-limits=true")
                .properties(more)
                .run();
    }

    private static RestClient client(ConfigurableApplicationContext instance) {
        return instance.getBean(RestClient.Builder.class).build();
    }

    private int call(RestClient client) {
        return client.get()
                .uri(this.server.url() + "/quote")
                .exchange((request, response) -> response.getStatusCode().value());
    }

    @Test
    void afterTheFirst429ThatOneInstanceReceivesNoInstanceCallsTheServerUntilThePauseEnds() {
        try (ConfigurableApplicationContext a = instance();
                ConfigurableApplicationContext b = instance()) {
            RestClient onA = client(a);
            RestClient onB = client(b);
            assertThat(call(onB)).isEqualTo(200);
            this.server.thenAnswer(429, Map.of("Retry-After", "2"));
            assertThat(call(onA)).isEqualTo(429);
            long pausedAt = System.nanoTime();
            assertThat(pausedRows())
                    .as("one row, ended by the database's clock")
                    .isOne();
            int refusedOnB = 0;
            while (true) {
                try {
                    assertThat(call(onB)).isEqualTo(200);
                    break;
                } catch (OutgoingCallThrottledException ex) {
                    assertThat(ex.isRemotePause()).isTrue();
                    refusedOnB++;
                    assertThat(this.server.calls())
                            .as("nothing reached the server during the pause")
                            .isEqualTo(2);
                    sleep(50);
                }
            }
            assertThat(System.nanoTime() - pausedAt)
                    .as("B's first call after the 429 was sent once the pause had ended")
                    .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(1_900));
            assertThat(refusedOnB).isGreaterThan(5);
            assertThat(this.server.calls()).isEqualTo(3);
        }
    }

    @Test
    void anInstanceWhoseWaitOutlastsThePauseWaitsForItsEndThenCalls() {
        try (ConfigurableApplicationContext a = instance();
                ConfigurableApplicationContext b = instance("throttle.clients.quotes.wait=5s")) {
            this.server.thenAnswer(503, Map.of("Retry-After", "1"));
            assertThat(call(client(a))).isEqualTo(503);
            long start = System.nanoTime();
            assertThat(call(client(b))).isEqualTo(200);
            assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(800));
            assertThat(this.server.calls()).isEqualTo(2);
        }
    }

    private static int pausedRows() {
        try (Connection connection = SharedPostgres.dataSource().getConnection();
                Statement statement = connection.createStatement();
                ResultSet count = statement.executeQuery("SELECT count(*) FROM throttle_remote_pauses")) {
            count.next();
            return count.getInt(1);
        } catch (SQLException ex) {
            throw new IllegalStateException(ex);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(ex);
        }
    }
}
