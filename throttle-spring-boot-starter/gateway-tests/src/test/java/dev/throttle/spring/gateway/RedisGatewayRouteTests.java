package dev.throttle.spring.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.testing.redis.SharedRedis;
import io.lettuce.core.api.StatefulRedisConnection;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpStatus;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.WebTestClient;

/** Gateway routes throttled on a real Redis: the state lives there, under the policy and the resolved key. */
class RedisGatewayRouteTests extends GatewayRouteTests {

    /** Keys of this run only: the shared Redis may hold other tests' keys. */
    private static final String RUN = UUID.randomUUID().toString().substring(0, 8);

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        registry.add("throttle.store.type", () -> "redis");
        registry.add("throttle.store.redis.timeout", () -> "2s");
        registry.add("spring.data.redis.url", () -> SharedRedis.endpoint().url());
        // a route as written for the gateway's own RedisRateLimiter, before throttle was added
        String route = "spring.cloud.gateway.server.webflux.routes[3].";
        registry.add(route + "id", () -> "legacy");
        registry.add(route + "uri", GatewayRouteTests::backendUrl);
        registry.add(route + "predicates[0].name", () -> "Path");
        registry.add(route + "predicates[0].args.pattern", () -> "/legacy/**");
        registry.add(route + "filters[0].name", () -> "RequestRateLimiter");
        registry.add(route + "filters[0].args.key-resolver", () -> "#{@clientKeyResolver}");
        registry.add(route + "filters[0].args.redis-rate-limiter.replenishRate", () -> "1");
        registry.add(route + "filters[0].args.redis-rate-limiter.burstCapacity", () -> "1");
        registry.add(route + "filters[0].args.redis-rate-limiter.requestedTokens", () -> "1");
    }

    @Override
    String client(String name) {
        return name + "-" + RUN;
    }

    @Test
    void aRouteWrittenForTheGatewaysRedisRateLimiterKeepsIt(
            @org.springframework.boot.test.web.server.LocalServerPort int port) {
        WebTestClient client =
                WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port).build();
        String frank = client("frank");
        client.get()
                .uri("/legacy/hello")
                .header("X-Client", frank)
                .exchange()
                .expectStatus()
                .isEqualTo(HttpStatus.OK)
                .expectHeader()
                .valueEquals("X-RateLimit-Burst-Capacity", "1")
                .expectHeader()
                .doesNotExist("RateLimit-Policy");
        client.get()
                .uri("/legacy/hello")
                .header("X-Client", frank)
                .exchange()
                .expectStatus()
                .isEqualTo(HttpStatus.TOO_MANY_REQUESTS);
    }

    @Test
    void theStateOfARoutesKeyLivesInRedis(@org.springframework.boot.test.web.server.LocalServerPort int port) {
        String erin = client("erin");
        WebTestClient.bindToServer()
                .baseUrl("http://127.0.0.1:" + port)
                .build()
                .get()
                .uri("/api/hello")
                .header("X-Client", erin)
                .exchange()
                .expectStatus()
                .isEqualTo(HttpStatus.OK);
        try (var client = SharedRedis.endpoint().newClient();
                StatefulRedisConnection<String, String> connection = client.connect()) {
            assertThat(connection.sync().exists("throttle:{api:" + erin + "}")).isEqualTo(1);
        }
    }
}
