package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.testing.Eventually;
import dev.throttle.testing.redis.SharedRedis;
import io.lettuce.core.KillArgs;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * A policy changed at run time on one instance of a fleet sharing a real Redis: stored with a
 * version, applied by every instance within a second, kept by an instance that starts later, reverted
 * everywhere, and the same numbers everywhere when two instances change one policy at once.
 */
class RedisFleetPolicyChangesTests {

    private static final HttpClient http = HttpClient.newHttpClient();

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Hello.class)
    static class Instance {}

    @RestController
    static class Hello {

        @GetMapping("/hello")
        @Throttled(policy = "api", key = "#ip")
        String hello() {
            return "hello";
        }
    }

    @BeforeEach
    void flush() {
        SharedRedis.flush();
    }

    private static ConfigurableApplicationContext start() {
        return new SpringApplicationBuilder(Instance.class)
                .properties(
                        "server.port=0",
                        "spring.data.redis.url=" + SharedRedis.endpoint().url(),
                        "throttle.store.type=redis",
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=3",
                        "throttle.policies.api.period=60s",
                        "management.endpoints.web.exposure.include=throttle",
                        "management.endpoint.throttle.access=unrestricted",
                        "spring.main.banner-mode=off")
                .run();
    }

    @Test
    void aChangeOnOneInstanceReachesAnotherWithinASecondSurvivesARestartAndIsRevertedEverywhere() throws Exception {
        try (ConfigurableApplicationContext a = start()) {
            ConfigurableApplicationContext b = start();
            try {
                assertThat(policyHeader(b)).isEqualTo("\"api\";q=3;w=60");
                HttpResponse<String> changed = send(a, "POST", "/actuator/throttle/api", "{\"limit\": 7}");
                assertThat(changed.statusCode()).isEqualTo(200);
                // how soon is a measurement (the logs of one run: 17 ms), not asserted here
                Eventually.until("B applies the change", () -> policyHeader(b).equals("\"api\";q=7;w=60"));

                String described = send(b, "GET", "/actuator/throttle", null).body();
                assertThat(described)
                        .as("who changed it, when, and the configured numbers beside the applied ones")
                        .contains("\"changed\":{\"by\":\"unknown\"")
                        .contains("\"configured\":{\"limit\":3");
            } finally {
                b.close();
            }
            try (ConfigurableApplicationContext restarted = start()) {
                assertThat(restarted.getBean(Throttler.class).policy("api").toString())
                        .as("loaded before it serves")
                        .contains("7");
                assertThat(policyHeader(restarted)).isEqualTo("\"api\";q=7;w=60");
                HttpResponse<String> reverted = send(restarted, "DELETE", "/actuator/throttle/api", null);
                assertThat(reverted.statusCode()).isEqualTo(200);
                Eventually.until("A reverts too", () -> policyHeader(a).equals("\"api\";q=3;w=60"));
                assertThat(send(a, "GET", "/actuator/throttle", null).body()).doesNotContain("\"changed\"");
            }
        }
    }

    @Test
    void twoInstancesChangingOnePolicyAtOnceEndOnTheSameNumbers() throws Exception {
        try (ConfigurableApplicationContext a = start();
                ConfigurableApplicationContext b = start()) {
            for (int round = 0; round < 10; round++) {
                int onA = 10 + round;
                int onB = 20 + round;
                CompletableFuture<HttpResponse<String>> fromA = CompletableFuture.supplyAsync(
                        () -> send(a, "POST", "/actuator/throttle/api", "{\"limit\": " + onA + "}"));
                CompletableFuture<HttpResponse<String>> fromB = CompletableFuture.supplyAsync(
                        () -> send(b, "POST", "/actuator/throttle/api", "{\"limit\": " + onB + "}"));
                assertThat(fromA.get().statusCode()).isEqualTo(200);
                assertThat(fromB.get().statusCode()).isEqualTo(200);
                Set<String> thisRound = Set.of("\"api\";q=" + onA + ";w=60", "\"api\";q=" + onB + ";w=60");
                Eventually.until("both instances apply the same one of this round's changes", () -> {
                    String onInstanceA = policyHeader(a);
                    return thisRound.contains(onInstanceA) && onInstanceA.equals(policyHeader(b));
                });
            }
        }
    }

    @Test
    void aChangeAnInstanceCannotApplyIsSkippedAndLaterChangesStillApply() throws Exception {
        LettuceConnectionFactory factory = SharedRedis.endpoint().newConnectionFactory();
        RedisSharedPolicyChanges writer = new RedisSharedPolicyChanges(factory, "throttle");
        try (ConfigurableApplicationContext a = start()) {
            // a rolling deploy: another version of the application knows a policy and a setting this one does not
            writer.save("search", Map.of("limit", "5"), "newer-version");
            writer.save("api", Map.of("limit", "-5"), "someone");
            writer.save("api", Map.of("limit", "9"), "someone");
            Eventually.until("the valid change applies", () -> policyHeader(a).equals("\"api\";q=9;w=60"));
            assertThat(a.isRunning()).isTrue();
        } finally {
            writer.close();
            factory.destroy();
        }
    }

    @Test
    void aStoreThatLostItsChangesIsTakenAsItIsAndEveryLaterChangeApplies() throws Exception {
        LettuceConnectionFactory factory = SharedRedis.endpoint().newConnectionFactory();
        RedisSharedPolicyChanges writer = new RedisSharedPolicyChanges(factory, "throttle");
        try (ConfigurableApplicationContext a = start();
                ConfigurableApplicationContext b = start()) {
            for (int limit = 5; limit <= 9; limit++) {
                assertThat(send(a, "POST", "/actuator/throttle/api", "{\"limit\": " + limit + "}")
                                .statusCode())
                        .isEqualTo(200);
            }
            Eventually.until("B applies change 5", () -> policyHeader(b).equals("\"api\";q=9;w=60"));
            // what a Redis restarted without persistence holds: nothing, its versions counted from 1 again
            SharedRedis.flush();
            assertThat(send(a, "POST", "/actuator/throttle/api", "{\"limit\": 2}")
                            .statusCode())
                    .isEqualTo(200);
            assertThat(policyHeader(a))
                    .as("applied where it was made, though the store numbered it 1")
                    .isEqualTo("\"api\";q=2;w=60");
            Eventually.until("B applies it too", () -> policyHeader(b).equals("\"api\";q=2;w=60"));
            assertThat(send(b, "POST", "/actuator/throttle/api", "{\"limit\": 4}")
                            .statusCode())
                    .isEqualTo(200);
            Eventually.until("A applies B's next change", () -> policyHeader(a).equals("\"api\";q=4;w=60"));

            SharedRedis.flush();
            // any change heard makes an instance read the store: it holds no change of api any more
            writer.save("search", Map.of("limit", "5"), "another-version");
            Eventually.until(
                    "both go back to the configuration, as an instance that starts now does",
                    () -> policyHeader(a).equals("\"api\";q=3;w=60")
                            && policyHeader(b).equals("\"api\";q=3;w=60"));
        } finally {
            writer.close();
            factory.destroy();
        }
    }

    @Test
    void anInstanceWhoseSubscriptionWasKilledReadsTheChangesItMissed() throws Exception {
        LettuceConnectionFactory factory = SharedRedis.endpoint().newConnectionFactory();
        RedisSharedPolicyChanges writer = new RedisSharedPolicyChanges(factory, "throttle");
        RedisClient client = SharedRedis.endpoint().newClient();
        try (ConfigurableApplicationContext a = start();
                StatefulRedisConnection<String, String> connection = client.connect()) {
            assertThat(policyHeader(a)).isEqualTo("\"api\";q=3;w=60");
            connection.sync().clientKill(KillArgs.Builder.typePubsub());
            writer.save("api", Map.of("limit", "11"), "someone");
            Eventually.until("the change is read again", () -> policyHeader(a).equals("\"api\";q=11;w=60"));
        } finally {
            writer.close();
            factory.destroy();
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
    }

    private static String policyHeader(ConfigurableApplicationContext app) {
        return send(app, "GET", "/hello", null)
                .headers()
                .firstValue("RateLimit-Policy")
                .orElse("");
    }

    private static HttpResponse<String> send(
            ConfigurableApplicationContext app, String method, String path, String json) {
        int port = Integer.parseInt(app.getEnvironment().getProperty("local.server.port"));
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(10));
        if (json != null) {
            request.header("Content-Type", "application/json")
                    .method(method, HttpRequest.BodyPublishers.ofString(json));
        } else {
            request.method(method, HttpRequest.BodyPublishers.noBody());
        }
        try {
            return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
        } catch (Exception ex) {
            throw new IllegalStateException(ex);
        }
    }
}
