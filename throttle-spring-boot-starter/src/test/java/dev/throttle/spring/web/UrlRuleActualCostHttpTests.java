package dev.throttle.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import jakarta.servlet.http.HttpServletResponse;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * URL rules through a real Tomcat port: a rule's {@code actual-cost-header} settles what the
 * handler says the request cost, for a plain and an asynchronous response; a missing header keeps
 * the cost charged before; and a rule whose policy has a {@code wait} makes the request wait for
 * its turn rather than refusing it.
 */
class UrlRuleActualCostHttpTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    private static ConfigurableApplicationContext app;

    private static int port;

    @BeforeAll
    static void start() {
        app = new SpringApplicationBuilder(App.class)
                .web(WebApplicationType.SERVLET)
                .properties(
                        "server.port=0",
                        "spring.main.banner-mode=off",
                        "throttle.policies.export.algorithm=token-bucket",
                        "throttle.policies.export.capacity=100",
                        "throttle.policies.export.refill-period=1h",
                        "throttle.policies.export.max-debt=10",
                        "throttle.policies.paced.algorithm=gcra",
                        "throttle.policies.paced.limit=1",
                        "throttle.policies.paced.period=400ms",
                        "throttle.policies.paced.wait=5s",
                        "throttle.http.rules[0].paths=/export/**",
                        "throttle.http.rules[0].policy=export",
                        "throttle.http.rules[0].key=#params['user']",
                        "throttle.http.rules[0].actual-cost-header=X-Rows",
                        "throttle.http.rules[1].paths=/paced",
                        "throttle.http.rules[1].policy=paced")
                .run();
        port = Integer.parseInt(app.getEnvironment().getProperty("local.server.port"));
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    private static HttpResponse<String> get(String path) throws Exception {
        return client.send(
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
        assertThat(get("/export/plain?user=alice&rows=30").statusCode()).isEqualTo(200);
        assertThat(left("alice")).as("1 charged before, settled to 30").isEqualTo(70);
        assertThat(get("/export/plain?user=alice&rows=0").statusCode()).isEqualTo(200);
        assertThat(left("alice")).as("a request that cost nothing took nothing").isEqualTo(70);
    }

    @Test
    void anAsynchronousResponseIsSettledWhenItCompletes() throws Exception {
        assertThat(get("/export/later?user=bob&rows=12").statusCode()).isEqualTo(200);
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (left("bob") != 88 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(left("bob")).isEqualTo(88);
    }

    @Test
    void aMissingHeaderKeepsTheCostChargedBeforeAndADebtIsBounded() throws Exception {
        assertThat(get("/export/none?user=carol").statusCode()).isEqualTo(200);
        assertThat(left("carol")).isEqualTo(99);
        assertThat(get("/export/plain?user=dave&rows=500").statusCode()).isEqualTo(200);
        HttpResponse<String> refused = get("/export/plain?user=dave&rows=1");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(Long.parseLong(refused.headers().firstValue("Retry-After").orElseThrow()))
                .as("a debt of max-debt 10 and the request's own unit: 11 refills of an hour")
                .isGreaterThan(10 * 3600)
                .isLessThanOrEqualTo(11 * 3600);
    }

    @Test
    void aRulesPolicyWithAWaitMakesTheRequestWaitForItsTurn() throws Exception {
        assertThat(get("/paced").statusCode()).isEqualTo(200);
        long start = System.nanoTime();
        HttpResponse<String> waited = get("/paced");
        long waitedMillis = Duration.ofNanos(System.nanoTime() - start).toMillis();
        assertThat(waited.statusCode()).as("waited for its turn, not refused").isEqualTo(200);
        assertThat(waitedMillis).as("the next turn was about 400 ms away").isGreaterThanOrEqualTo(250);
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Endpoints.class)
    static class App {}

    @RestController
    static class Endpoints {

        @GetMapping("/export/plain")
        Map<String, Integer> plain(@RequestParam int rows, HttpServletResponse response) {
            response.setHeader("X-Rows", Integer.toString(rows));
            return Map.of("rows", rows);
        }

        @GetMapping("/export/later")
        CompletableFuture<Map<String, Integer>> later(@RequestParam int rows, HttpServletResponse response) {
            return CompletableFuture.supplyAsync(() -> {
                response.setHeader("X-Rows", Integer.toString(rows));
                return Map.of("rows", rows);
            });
        }

        @GetMapping("/export/none")
        Map<String, String> none() {
            return Map.of("rows", "unknown");
        }

        @GetMapping("/paced")
        Map<String, String> paced() {
            return Map.of("paced", "yes");
        }
    }
}
