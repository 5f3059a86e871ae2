package dev.throttle.spring.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import dev.throttle.testing.redis.SharedRedis;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The early decision of a WebFlux handler on the Redis store, whose decisions complete on another
 * thread: through a real Netty port and a real Redis, a refused request runs no
 * {@code @ModelAttribute} method, each request is decided once, a success still settles, and a
 * burst at a freshly started instance gets exactly the limit through.
 */
class WebFluxEarlyDecisionRedisTests {

    @BeforeEach
    void clearState() {
        SharedRedis.flush();
        WebFluxEarlyDecisionTests.lookups.set(0);
        WebFluxEarlyDecisionTests.decisions.set(0);
    }

    private static ConfigurableApplicationContext start() {
        return new SpringApplicationBuilder(WebFluxEarlyDecisionTests.App.class)
                .web(WebApplicationType.REACTIVE)
                .properties(
                        "server.port=0",
                        "spring.main.banner-mode=off",
                        "spring.data.redis.url=" + SharedRedis.endpoint().url(),
                        "throttle.store.type=redis",
                        // what these tests prove is one decision per request, not the store's
                        // bound: on a loaded CI machine a 1 s bound could turn a call into a local
                        // answer
                        "throttle.store.redis.timeout=10s",
                        "throttle.policies.early.algorithm=gcra",
                        "throttle.policies.early.limit=3",
                        "throttle.policies.early.period=60s",
                        "throttle.policies.login.algorithm=lockout",
                        "throttle.policies.login.timeouts=1h",
                        "throttle.policies.login.reset-on-success=true",
                        "throttle.policies.byarg.algorithm=gcra",
                        "throttle.policies.byarg.limit=5",
                        "throttle.policies.byarg.period=60s",
                        "throttle.policies.own.algorithm=gcra",
                        "throttle.policies.own.limit=1",
                        "throttle.policies.own.period=60s",
                        "throttle.policies.pages.algorithm=gcra",
                        "throttle.policies.pages.limit=3",
                        "throttle.policies.pages.period=60s")
                .run();
    }

    private static int port(ConfigurableApplicationContext app) {
        return Integer.parseInt(app.getEnvironment().getProperty("local.server.port"));
    }

    /**
     * Each request on a connection of its own: Reactor Netty has been seen to hang a request on a
     * reused keep-alive connection after a 429 (see {@link WebFluxUrlRulesTests#send}), and sending
     * it again there would be a second decision, which is what these tests count.
     */
    static HttpResponse<String> get(int port, String path) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(30))
                .build();
        return HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void onRedisARefusedRequestRunsNoModelAttributeMethodAndEachRequestIsDecidedOnce() throws Exception {
        try (ConfigurableApplicationContext app = start()) {
            int port = port(app);
            Throttler throttler = app.getBean(Throttler.class);
            for (int i = 0; i < 3; i++) {
                assertThat(get(port, "/owners?ownerId=1").statusCode()).isEqualTo(200);
            }
            HttpResponse<String> refused = get(port, "/owners?ownerId=1");
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.headers().firstValue("Retry-After")).isPresent();
            assertThat(WebFluxEarlyDecisionTests.lookups)
                    .as("no lookup for the refused request")
                    .hasValue(3);
            assertThat(WebFluxEarlyDecisionTests.decisions)
                    .as("one decision per request")
                    .hasValue(4);

            assertThat(get(port, "/login?ownerId=1&ok=false").statusCode()).isEqualTo(401);
            assertThat(get(port, "/login?ownerId=1&ok=false").statusCode())
                    .as("locked out after one failure")
                    .isEqualTo(429);
            assertThat(throttler.reset("login", "127.0.0.1"))
                    .as("Redis carried out the reset")
                    .isTrue();
            assertThat(get(port, "/login?ownerId=1&ok=true").statusCode()).isEqualTo(200);
            assertThat(throttler.peek("login", "127.0.0.1").allowed())
                    .as("reset on success")
                    .isTrue();
            assertThat(WebFluxEarlyDecisionTests.lookups).hasValue(5);
        }
    }

    @Test
    void aBurstAtAFreshlyStartedInstanceGetsExactlyTheLimitThrough() throws Exception {
        try (ConfigurableApplicationContext app = start()) {
            HttpClient client = HttpClient.newHttpClient();
            HttpRequest request = HttpRequest.newBuilder(
                            URI.create("http://127.0.0.1:" + port(app) + "/pages/burst?ownerId=1"))
                    .timeout(Duration.ofSeconds(30))
                    .build();
            List<CompletableFuture<HttpResponse<String>>> burst = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                burst.add(client.sendAsync(request, HttpResponse.BodyHandlers.ofString()));
            }
            List<Integer> statuses = burst.stream()
                    .map((response) -> response.join().statusCode())
                    .toList();
            assertThat(statuses)
                    .as("statuses: %s", statuses)
                    .filteredOn((status) -> status == 200)
                    .hasSize(3);
            assertThat(statuses)
                    .as("statuses: %s", statuses)
                    .filteredOn((status) -> status == 429)
                    .hasSize(17);
            assertThat(WebFluxEarlyDecisionTests.decisions)
                    .as("one decision per request")
                    .hasValue(20);
            assertThat(WebFluxEarlyDecisionTests.lookups)
                    .as("a lookup for the allowed requests only")
                    .hasValue(3);
        }
    }
}
