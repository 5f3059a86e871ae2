package dev.throttle.spring.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.spring.annotation.Throttled;
import dev.throttle.testing.SilentServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * An application on the jdbc store whose PostgreSQL takes connections and never answers (frozen,
 * or behind a proxy whose far side is gone). PostgreSQL's driver waits for a login without bound by
 * default, so the start's check of the database once waited forever; now the start goes on, the
 * failure mode answers requests within the store's timeout, and the application shuts down.
 */
class JdbcSilentDatabaseTests {

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Hello.class)
    static class Instance {}

    @RestController
    static class Hello {

        @GetMapping("/hello")
        @Throttled(policy = "api", key = "#ip")
        String hello() {
            return "hello";
        }
    }

    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void theApplicationStartsAnswersByItsFailureModeAndShutsDownWhileTheDatabaseIsSilent() throws Exception {
        try (SilentServer silent = SilentServer.start()) {
            long start = System.nanoTime();
            ConfigurableApplicationContext context = new SpringApplicationBuilder(Instance.class)
                    .properties(
                            "server.port=0",
                            "spring.datasource.url=jdbc:postgresql://127.0.0.1:" + silent.port() + "/throttle",
                            "spring.datasource.username=throttle",
                            "throttle.store.type=jdbc",
                            "throttle.store.jdbc.failure-mode=closed",
                            "throttle.policies.api.algorithm=gcra",
                            "throttle.policies.api.limit=3",
                            "throttle.policies.api.period=60s",
                            "spring.main.banner-mode=off")
                    .run();
            Duration started = Duration.ofNanos(System.nanoTime() - start);
            try {
                assertThat(silent.connections())
                        .as("the start reached the silent database")
                        .isPositive();
                // the check of the database waits ten seconds; the warm-up and the fleet's reads are bounded too
                assertThat(started).isLessThan(Duration.ofSeconds(45));
                int port = context.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
                long asked = System.nanoTime();
                HttpResponse<String> response = HttpClient.newHttpClient()
                        .send(
                                HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/hello"))
                                        .timeout(Duration.ofSeconds(20))
                                        .build(),
                                HttpResponse.BodyHandlers.ofString());
                // failure-mode closed: refused (Retry-After: 1), never let through unthrottled
                assertThat(response.statusCode()).isEqualTo(429);
                assertThat(Duration.ofNanos(System.nanoTime() - asked)).isLessThan(Duration.ofSeconds(5));
            } finally {
                long closing = System.nanoTime();
                context.close();
                assertThat(Duration.ofNanos(System.nanoTime() - closing)).isLessThan(Duration.ofSeconds(15));
            }
        }
    }
}
