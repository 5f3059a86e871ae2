package dev.throttle.spring.client;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.core.env.Environment;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.client.RestClient;

/**
 * An application endpoint whose outgoing call cannot be sent in time answers {@code 503 Service
 * Unavailable} with {@code Retry-After} (its dependency is busy; the caller did nothing wrong), and
 * no rate-limit fields that would describe the dependency's limit as the caller's. Through a real port.
 */
class OutgoingCallRefusalTests {

    private static final HttpClient http = HttpClient.newHttpClient();

    private CountingServer upstream;

    private ConfigurableApplicationContext application;

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Quotes.class)
    static class Application {}

    @RestController
    static class Quotes {

        private final RestClient client;

        Quotes(RestClient.Builder builder, @Value("${test.upstream}") String upstream) {
            this.client = builder.baseUrl(upstream).build();
        }

        @GetMapping("/api/quote")
        String quote() {
            return this.client.get().uri("/quote").retrieve().body(String.class);
        }
    }

    @BeforeEach
    void start() throws Exception {
        this.upstream = new CountingServer();
        this.application = new SpringApplicationBuilder(Application.class)
                .properties(
                        "server.port=0",
                        "spring.main.banner-mode=off",
                        "test.upstream=" + this.upstream.url(),
                        "throttle.policies.upstream.algorithm=gcra",
                        "throttle.policies.upstream.limit=1",
                        "throttle.policies.upstream.period=60s",
                        "throttle.clients.quotes.base-url=" + this.upstream.url(),
                        "throttle.clients.quotes.policy=upstream",
                        "throttle.clients.quotes.honor-remote-limits=true")
                .run();
    }

    @AfterEach
    void stop() {
        this.application.close();
        this.upstream.close();
    }

    private HttpResponse<String> get(String path) throws Exception {
        String port = this.application.getBean(Environment.class).getProperty("local.server.port");
        return http.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                        .header("Accept", "application/json")
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aCallTheClientsPolicyCannotSendInTimeIsAnswered503WithRetryAfter() throws Exception {
        assertThat(get("/api/quote").statusCode()).isEqualTo(200);
        HttpResponse<String> refused = get("/api/quote");
        assertThat(refused.statusCode()).isEqualTo(503);
        assertThat(refused.headers().firstValueAsLong("Retry-After").orElseThrow())
                .isBetween(1L, 60L);
        assertThat(refused.headers().firstValue("RateLimit")).isEmpty();
        assertThat(refused.body())
                .contains("\"status\":503")
                .contains("Service Unavailable")
                .contains("client 'quotes'");
        assertThat(this.upstream.calls()).isEqualTo(1);
    }

    @Test
    void aCallTheRemotesPauseKeepsBackIsAnswered503WithThePausesRetryAfter() throws Exception {
        this.upstream.thenAnswer(429, Map.of("Retry-After", "30"));
        assertThat(get("/api/quote").statusCode())
                .as("the remote's 429 reached the endpoint, which failed on it")
                .isEqualTo(500);
        HttpResponse<String> refused = get("/api/quote");
        assertThat(refused.statusCode()).isEqualTo(503);
        assertThat(refused.headers().firstValueAsLong("Retry-After").orElseThrow())
                .isBetween(29L, 30L);
        assertThat(this.upstream.calls()).isEqualTo(1);
    }
}
