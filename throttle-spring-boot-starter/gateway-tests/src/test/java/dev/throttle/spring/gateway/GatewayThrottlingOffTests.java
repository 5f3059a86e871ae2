package dev.throttle.spring.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.cloud.gateway.filter.ratelimit.RateLimiter;
import org.springframework.http.HttpStatus;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.EntityExchangeResult;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * {@code throttle.enabled=false} in a gateway whose routes name policies: the gateway starts (its
 * {@code RequestRateLimiter} filter needs a {@code RateLimiter}) and every call reaches the backend,
 * without a decision or a header.
 */
@SpringBootTest(
        classes = GatewayTestApplication.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.enabled=false",
            "throttle.policies.api.algorithm=fixed-window",
            "throttle.policies.api.limit=1",
            "throttle.policies.api.window=1h"
        })
class GatewayThrottlingOffTests {

    private static final Backend backend = Backend.start();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(backend::close));
    }

    @LocalServerPort
    private int port;

    @Autowired
    private RateLimiter<?> rateLimiter;

    @DynamicPropertySource
    static void routes(DynamicPropertyRegistry registry) {
        String route = "spring.cloud.gateway.server.webflux.routes[0].";
        registry.add(route + "id", () -> "api");
        registry.add(route + "uri", backend::url);
        registry.add(route + "predicates[0].name", () -> "Path");
        registry.add(route + "predicates[0].args.pattern", () -> "/api/**");
        registry.add(route + "filters[0].name", () -> "RequestRateLimiter");
        registry.add(route + "filters[0].args.key-resolver", () -> "#{@clientKeyResolver}");
        registry.add(route + "filters[0].args.throttle.policy", () -> "api");
    }

    @Test
    void everyCallOfARouteThatNamesAPolicyReachesTheBackendWithoutHeaders() {
        WebTestClient client = WebTestClient.bindToServer()
                .baseUrl("http://127.0.0.1:" + this.port)
                .responseTimeout(Duration.ofSeconds(10))
                .build();
        assertThat(this.rateLimiter).isInstanceOf(ThrottleRateLimiter.class);
        int before = backend.requests();
        for (int i = 0; i < 5; i++) {
            EntityExchangeResult<String> answer = client.get()
                    .uri("/api/hello")
                    .header("X-Client", "alice")
                    .exchange()
                    .expectBody(String.class)
                    .returnResult();
            assertThat(answer.getStatus()).isEqualTo(HttpStatus.OK);
            assertThat(answer.getResponseHeaders().getFirst("RateLimit")).isNull();
            assertThat(answer.getResponseHeaders().getFirst("RateLimit-Policy")).isNull();
        }
        assertThat(backend.requests() - before).isEqualTo(5);
    }
}
