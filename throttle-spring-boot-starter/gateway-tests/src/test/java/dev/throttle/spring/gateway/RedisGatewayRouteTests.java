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
    }

    @Override
    String client(String name) {
        return name + "-" + RUN;
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
