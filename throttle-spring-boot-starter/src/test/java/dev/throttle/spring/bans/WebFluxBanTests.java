package dev.throttle.spring.bans;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.spring.annotation.Throttled;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * A ban on WebFlux, through a real Netty port: refusals of a URL rule and of an annotated handler
 * both count, the ban then refuses every request of the address before anything runs, and ends on
 * time; a ban keyed by a header answers with its own status.
 */
@SpringBootTest(
        classes = WebFluxBanTests.App.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.main.web-application-type=reactive",
            "throttle.policies.api.algorithm=fixed-window",
            "throttle.policies.api.limit=1",
            "throttle.policies.api.window=1h",
            "throttle.policies.annotated.algorithm=fixed-window",
            "throttle.policies.annotated.limit=1",
            "throttle.policies.annotated.window=1h",
            "throttle.http.rules[0].paths=/api/**",
            "throttle.http.rules[0].policy=api",
            "throttle.http.rules[0].key=#ip",
            "throttle.bans.abuse.after=3",
            "throttle.bans.abuse.within=1m",
            "throttle.bans.abuse.policies=api,annotated",
            "throttle.bans.abuse.for=10m",
            "throttle.bans.by-key.after=100",
            "throttle.bans.by-key.within=1m",
            "throttle.bans.by-key.policies=api",
            "throttle.bans.by-key.for=1h",
            "throttle.bans.by-key.key=#headers['X-Api-Key']",
            "throttle.bans.by-key.status=403"
        })
class WebFluxBanTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    @LocalServerPort
    int port;

    @Autowired
    ManualTimeSource clock;

    @Autowired
    Bans bans;

    @BeforeEach
    void noBanNorCount() {
        this.bans.active().forEach((ban) -> this.bans.lift(ban.ban(), ban.key()));
        this.clock.advance(Duration.ofHours(2));
    }

    @Test
    void refusalsOfARuleAndOfAnAnnotatedHandlerBanTheAddressFromEveryPageUntilTheBanEnds() throws Exception {
        assertThat(get("/api/hello").statusCode()).isEqualTo(200);
        assertThat(get("/api/hello").statusCode()).isEqualTo(429);
        assertThat(get("/annotated").statusCode()).isEqualTo(200);
        assertThat(get("/annotated").statusCode()).isEqualTo(429);
        assertThat(get("/open").statusCode()).isEqualTo(200);
        assertThat(get("/annotated").statusCode()).isEqualTo(429);

        HttpResponse<String> banned = get("/open");
        assertThat(banned.statusCode()).isEqualTo(429);
        assertThat(banned.headers().firstValue("Retry-After")).hasValue("600");
        assertThat(banned.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(banned.body()).contains("\"ban\":\"abuse\"").doesNotContain("127.0.0.1");

        this.clock.advance(Duration.ofMinutes(10));
        assertThat(get("/open").statusCode()).isEqualTo(200);
    }

    @Test
    void aBanKeyedByAHeaderRefusesThatKeyWithItsOwnStatus() throws Exception {
        this.bans.start("by-key", "k-1", Duration.ofMinutes(1));
        HttpResponse<String> banned = get("/open", "X-Api-Key", "k-1");
        assertThat(banned.statusCode()).isEqualTo(403);
        assertThat(banned.headers().firstValue("Retry-After")).hasValue("60");
        assertThat(banned.body()).contains("\"status\":403").contains("\"ban\":\"by-key\"");
        assertThat(get("/open", "X-Api-Key", "k-2").statusCode()).isEqualTo(200);
        assertThat(get("/open").statusCode()).isEqualTo(200);
    }

    private HttpResponse<String> get(String path, String... headers) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + path))
                .timeout(Duration.ofSeconds(10));
        if (headers.length > 0) {
            request.headers(headers);
        }
        return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Endpoints.class)
    static class App {

        @Bean
        ManualTimeSource throttleTimeSource() {
            return new ManualTimeSource(Instant.parse("2026-01-01T00:00:00Z"));
        }
    }

    @RestController
    static class Endpoints {

        @GetMapping("/api/hello")
        Mono<Map<String, String>> hello() {
            return Mono.just(Map.of("message", "hello"));
        }

        @GetMapping("/open")
        Mono<Map<String, String>> open() {
            return Mono.just(Map.of("message", "open"));
        }

        @GetMapping("/annotated")
        @Throttled(policy = "annotated", key = "#ip")
        Mono<Map<String, String>> annotated() {
            return Mono.just(Map.of("message", "annotated"));
        }
    }
}
