package dev.throttle.boot3;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ThrottleStore;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.testing.redis.RedisEndpoint;
import dev.throttle.testing.redis.SharedRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * {@code throttle.store.type=redis} in two Boot 3.5 applications on one real Redis (REDIS_URL, or
 * an embedded Redis 7): both use Boot 3.5's own connection from {@code spring.data.redis.*}, and
 * share one limit.
 */
class RedisStoreOnBoot35Tests {

    /** Not the default database: keys found there prove the store uses Boot's spring.data.redis.* connection. */
    private static final int DATABASE = 2;

    private static ConfigurableApplicationContext first;

    private static ConfigurableApplicationContext second;

    @BeforeAll
    static void startTwoInstances() {
        first = start();
        second = start();
    }

    @AfterAll
    static void stopInstances() {
        if (second != null) {
            second.close();
        }
        if (first != null) {
            first.close();
        }
    }

    private static ConfigurableApplicationContext start() {
        RedisEndpoint redis = SharedRedis.endpoint();
        List<String> properties = new ArrayList<>(List.of(
                "server.port=0",
                "spring.data.redis.host=" + redis.host(),
                "spring.data.redis.port=" + redis.port(),
                "spring.data.redis.database=" + DATABASE,
                "throttle.store.type=redis",
                "throttle.store.redis.timeout=2s",
                "throttle.store.redis.failure-mode=closed",
                "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=3",
                "throttle.policies.api.period=60s",
                "throttle.policies.burst.algorithm=token-bucket",
                "throttle.policies.burst.capacity=100",
                "throttle.policies.burst.refill-period=1s",
                "throttle.policies.login.algorithm=lockout",
                "throttle.policies.login.timeouts=1s",
                "management.endpoints.web.exposure.include=throttle",
                // the unlock is a write, which the endpoint refuses unless granted
                "management.endpoint.throttle.access=unrestricted"));
        if (redis.password() != null) {
            properties.add("spring.data.redis.password=" + redis.password());
        }
        if (redis.username() != null) {
            properties.add("spring.data.redis.username=" + redis.username());
        }
        return new SpringApplicationBuilder(MvcApplication.class)
                .properties(properties.toArray(String[]::new))
                .run();
    }

    private static int port(ConfigurableApplicationContext context) {
        return ((WebServerApplicationContext) context).getWebServer().getPort();
    }

    @BeforeEach
    void flush() {
        SharedRedis.flush();
    }

    @Test
    void bothInstancesUseARedisStoreOnBoot35sLettuceConnectionFactory() {
        for (ConfigurableApplicationContext context : List.of(first, second)) {
            ThrottleStore store = context.getBean(ThrottleStore.class);
            assertThat(store).isInstanceOf(ResilientThrottleStore.class);
            assertThat(store.kind()).isEqualTo("redis");
            assertThat(((ResilientThrottleStore) store).isStoreDown()).isFalse();
            assertThat(context.getBean(RedisConnectionFactory.class))
                    .isInstanceOf(LettuceConnectionFactory.class)
                    .extracting((factory) -> ((LettuceConnectionFactory) factory).getDatabase())
                    .isEqualTo(DATABASE);
        }
    }

    @Test
    void twoInstancesOnOneRedisShareOneLimit() throws Exception {
        assertThat(Http.get(port(first), "/api").statusCode()).isEqualTo(200);
        assertThat(Http.get(port(second), "/api").statusCode()).isEqualTo(200);
        HttpResponse<String> third = Http.get(port(first), "/api");
        assertThat(third.statusCode()).isEqualTo(200);
        assertThat(third.headers().firstValue("RateLimit"))
                .hasValueSatisfying((value) -> assertThat(value).startsWith("\"api\";r=0;"));
        HttpResponse<String> refused = Http.get(port(second), "/api");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Retry-After"))
                .hasValueSatisfying(
                        (seconds) -> assertThat(Long.parseLong(seconds)).isBetween(1L, 20L));
        assertThat(Http.json(refused))
                .containsEntry("violated-policies", List.of("api"))
                .containsEntry("status", 429);
        assertThat(Http.get(port(first), "/api").statusCode()).isEqualTo(429);
    }

    @Test
    void stateLivesInRedisUnderThePrefixedKeyInTheConfiguredDatabaseWithAnExpiry() throws Exception {
        assertThat(Http.get(port(first), "/api").statusCode()).isEqualTo(200);
        RedisEndpoint redis = SharedRedis.endpoint();
        RedisEndpoint database =
                new RedisEndpoint(redis.host(), redis.port(), redis.username(), redis.password(), DATABASE);
        RedisClient client = database.newClient();
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            assertThat(connection.sync().keys("*")).containsExactly("throttle:{api:127.0.0.1}");
            assertThat(connection.sync().pttl("throttle:{api:127.0.0.1}")).isBetween(1L, 20_000L);
        } finally {
            client.shutdown();
        }
    }

    @Test
    void theActuatorEndpointOfOneInstanceUnlocksAKeyForTheOther() throws Exception {
        String login = "{\"email\":\"alice@example.com\",\"password\":\"guess\"}";
        assertThat(Http.postJson(port(first), "/login", login).statusCode()).isEqualTo(401);
        assertThat(Http.postJson(port(second), "/login", login).statusCode()).isEqualTo(429);
        HttpResponse<String> peek = Http.get(port(second), "/actuator/throttle/login/alice@example.com");
        assertThat(peek.statusCode()).isEqualTo(200);
        assertThat(Http.json(peek)).containsEntry("allowed", false).containsEntry("remaining", 0);
        assertThat(Http.delete(port(first), "/actuator/throttle/login/alice@example.com")
                        .statusCode())
                .isEqualTo(200);
        assertThat(Http.postJson(port(second), "/login", login).statusCode())
                .as("unlocked in Redis")
                .isEqualTo(401);
    }

    @Test
    void decisionsAreCountedWithTheRedisStoreTag() throws Exception {
        MeterRegistry registry = first.getBean(MeterRegistry.class);
        assertThat(Http.get(port(first), "/api").statusCode()).isEqualTo(200);
        Counter allowed = registry.find("throttle.decisions")
                .tags("policy", "api", "outcome", "allowed", "store", "redis")
                .counter();
        assertThat(allowed).isNotNull();
        double before = allowed.count();
        assertThat(Http.get(port(first), "/api").statusCode()).isEqualTo(200);
        assertThat(allowed.count()).isEqualTo(before + 1);
        assertThat(registry.find("throttle.decisions").tag("store", "memory").counters())
                .isEmpty();
    }
}
