package dev.throttle.spring.client;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.core.env.Environment;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Mono;

/**
 * On WebFlux: an endpoint whose {@code WebClient} call cannot be sent in time answers {@code 503}
 * with {@code Retry-After}, as on Spring MVC. Through a real port.
 */
class ReactiveOutgoingCallRefusalTests {

    private static final HttpClient http = HttpClient.newHttpClient();

    private CountingServer upstream;

    private ConfigurableApplicationContext application;

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Quotes.class)
    static class Application {}

    @RestController
    static class Quotes {

        private final WebClient client;

        Quotes(WebClient.Builder builder, @Value("${test.upstream}") String upstream) {
            this.client = builder.baseUrl(upstream).build();
        }

        @GetMapping("/api/quote")
        Mono<String> quote() {
            return this.client.get().uri("/quote").retrieve().bodyToMono(String.class);
        }
    }

    @BeforeEach
    void start() throws Exception {
        this.upstream = new CountingServer();
        this.application = new SpringApplicationBuilder(Application.class)
                .web(WebApplicationType.REACTIVE)
                .properties(
                        "server.port=0",
                        "spring.main.banner-mode=off",
                        "test.upstream=" + this.upstream.url(),
                        "throttle.policies.upstream.algorithm=gcra",
                        "throttle.policies.upstream.limit=1",
                        "throttle.policies.upstream.period=60s",
                        "throttle.clients.quotes.base-url=" + this.upstream.url(),
                        "throttle.clients.quotes.policy=upstream")
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
    void aWebClientCallTheClientsPolicyCannotSendInTimeIsAnswered503WithRetryAfter() throws Exception {
        assertThat(get("/api/quote").statusCode()).isEqualTo(200);
        HttpResponse<String> refused = get("/api/quote");
        assertThat(refused.statusCode()).isEqualTo(503);
        assertThat(refused.headers().firstValueAsLong("Retry-After").orElseThrow())
                .isBetween(1L, 60L);
        assertThat(refused.body()).contains("\"status\":503").contains("client 'quotes'");
        assertThat(this.upstream.calls()).isEqualTo(1);
    }
}
