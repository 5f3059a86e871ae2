package dev.throttle.spring.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * A URL rule's {@code actual-cost-header} in WebFlux, through a real Netty port: the header the
 * handler set settles what the request cost once the response is written; without it the cost
 * charged before stands.
 */
class WebFluxUrlRuleActualCostTests {

    private static ConfigurableApplicationContext app;

    private static int port;

    @BeforeAll
    static void start() {
        app = new SpringApplicationBuilder(App.class)
                .web(WebApplicationType.REACTIVE)
                .properties(
                        "server.port=0",
                        "spring.main.banner-mode=off",
                        "throttle.policies.export.algorithm=gcra",
                        "throttle.policies.export.limit=100",
                        "throttle.policies.export.period=1h",
                        "throttle.http.rules[0].paths=/export/**",
                        "throttle.http.rules[0].policy=export",
                        "throttle.http.rules[0].key=#params['user']",
                        "throttle.http.rules[0].actual-cost-header=X-Rows")
                .run();
        port = Integer.parseInt(app.getEnvironment().getProperty("local.server.port"));
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    /** A connection per request: see {@link WebFluxEarlyDecisionRedisTests#get}. */
    private static HttpResponse<String> get(String path) throws Exception {
        return HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                                .timeout(Duration.ofSeconds(30))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
    }

    private static int left(String user) {
        return app.getBean(Throttler.class).peek("export", user).remaining();
    }

    @Test
    void theHeaderTheHandlerSetSettlesWhatTheRequestCost() throws Exception {
        assertThat(get("/export/rows?user=alice&rows=30").statusCode()).isEqualTo(200);
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (left("alice") != 70 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(left("alice")).as("1 charged before, settled to 30").isEqualTo(70);
    }

    @Test
    void aMissingHeaderKeepsTheCostChargedBefore() throws Exception {
        assertThat(get("/export/none?user=bob").statusCode()).isEqualTo(200);
        assertThat(left("bob")).isEqualTo(99);
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Endpoints.class)
    static class App {}

    @RestController
    static class Endpoints {

        @GetMapping("/export/rows")
        Mono<Map<String, Integer>> rows(@RequestParam int rows, ServerHttpResponse response) {
            return Mono.fromSupplier(() -> {
                response.getHeaders().set("X-Rows", Integer.toString(rows));
                return Map.of("rows", rows);
            });
        }

        @GetMapping("/export/none")
        Mono<Map<String, String>> none() {
            return Mono.just(Map.of("rows", "unknown"));
        }
    }
}
