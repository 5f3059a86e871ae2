package dev.throttle.spring.bans;

import static dev.throttle.spring.bans.RedisBansFleetTests.send;
import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.testing.Eventually;
import dev.throttle.testing.jdbc.SharedPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;

/**
 * Bans shared by a fleet on a real PostgreSQL database: refusals counted on one instance ban the key
 * on another within a second; an instance started later holds the ban before it serves; a lift
 * through one instance's actuator reaches the other; the ban ends on time on both.
 */
class JdbcBansFleetTests {

    /** One clock for the whole fleet: bans end by the application's clock, as decided on any instance. */
    private final ManualTimeSource clock = new ManualTimeSource(Instant.parse("2026-01-01T00:00:00Z"));

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(RedisBansFleetTests.Pages.class)
    static class Instance {}

    @BeforeEach
    void clear() {
        SharedPostgres.clear();
    }

    private ConfigurableApplicationContext start() {
        return new SpringApplicationBuilder(Instance.class)
                .initializers((context) -> context.getBeanFactory().registerSingleton("throttleTimeSource", this.clock))
                .properties(
                        "server.port=0",
                        "spring.datasource.url=" + SharedPostgres.url(),
                        "throttle.store.type=jdbc",
                        "throttle.store.jdbc.timeout=3s",
                        "throttle.policies.api.algorithm=fixed-window",
                        "throttle.policies.api.limit=1",
                        "throttle.policies.api.window=1h",
                        "throttle.http.rules[0].paths=/api/**",
                        "throttle.http.rules[0].policy=api",
                        "throttle.http.rules[0].key=#ip",
                        "throttle.bans.abuse.after=3",
                        "throttle.bans.abuse.within=1m",
                        "throttle.bans.abuse.policies=api",
                        "throttle.bans.abuse.for=10m",
                        "management.server.port=0",
                        "management.endpoints.web.exposure.include=throttlebans",
                        "management.endpoint.throttlebans.access=unrestricted",
                        "spring.main.banner-mode=off")
                .run();
    }

    private static int storedBans() {
        try (Connection connection = SharedPostgres.dataSource().getConnection();
                Statement statement = connection.createStatement();
                ResultSet count = statement.executeQuery("SELECT count(*) FROM throttle_bans")) {
            count.next();
            return count.getInt(1);
        } catch (SQLException ex) {
            throw new IllegalStateException(ex);
        }
    }

    @Test
    void refusalsOnOneInstanceBanTheKeyOnAnotherAndTheBanEndsOnTimeOnBoth() throws Exception {
        try (ConfigurableApplicationContext a = start();
                ConfigurableApplicationContext b = start()) {
            assertThat(send(b, "GET", "/page").statusCode()).isEqualTo(200);
            assertThat(send(a, "GET", "/api/hello").statusCode()).isEqualTo(200);
            for (int i = 0; i < 3; i++) {
                assertThat(send(a, "GET", "/api/hello").statusCode()).isEqualTo(429);
            }
            assertThat(send(a, "GET", "/page").statusCode())
                    .as("banned on A at once")
                    .isEqualTo(429);
            Eventually.until("B reads the ban", () -> send(b, "GET", "/page").statusCode() == 429);
            assertThat(send(b, "GET", "/page").headers().firstValue("Retry-After"))
                    .hasValue("600");

            this.clock.advance(Duration.ofMinutes(10));
            assertThat(send(a, "GET", "/page").statusCode()).isEqualTo(200);
            assertThat(send(b, "GET", "/page").statusCode()).isEqualTo(200);
        }
    }

    @Test
    void anInstanceStartedLaterHoldsTheBanBeforeItServesAndALiftThroughItsActuatorReachesTheOther() throws Exception {
        try (ConfigurableApplicationContext a = start()) {
            send(a, "GET", "/api/hello");
            for (int i = 0; i < 3; i++) {
                send(a, "GET", "/api/hello");
            }
            assertThat(send(a, "GET", "/page").statusCode()).isEqualTo(429);
            // the ban is stored without the caller waiting
            Eventually.until("the ban is stored", () -> storedBans() == 1);
            try (ConfigurableApplicationContext later = start()) {
                assertThat(send(later, "GET", "/page").statusCode())
                        .as("read from the database at startup")
                        .isEqualTo(429);
                assertThat(send(later, "local.management.port", "DELETE", "/actuator/throttlebans/abuse/127.0.0.1")
                                .statusCode())
                        .as("lifted through the actuator")
                        .isEqualTo(200);
                assertThat(send(later, "GET", "/page").statusCode()).isEqualTo(200);
                Eventually.until(
                        "A reads the lift", () -> send(a, "GET", "/page").statusCode() == 200);
            }
        }
    }
}
