package dev.throttle.spring.bans;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.spring.redis.RedisSharedBans;
import dev.throttle.testing.Eventually;
import dev.throttle.testing.redis.RedisMonitor;
import dev.throttle.testing.redis.SharedRedis;
import io.lettuce.core.KillArgs;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
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
 * Bans shared by a fleet on a real Redis: refusals counted on one instance ban the key on another,
 * which then refuses that key's request to an unthrottled page from memory, without a single Redis
 * command; an instance started later holds the ban before it serves; a lift on one instance reaches
 * the other; the ban ends on time on both.
 */
class RedisBansFleetTests {

    private static final HttpClient http = HttpClient.newHttpClient();

    /** One clock for the whole fleet: bans end by the application's clock, as decided on any instance. */
    private final ManualTimeSource clock = new ManualTimeSource(Instant.parse("2026-01-01T00:00:00Z"));

    private RedisClient client;

    private StatefulRedisConnection<String, String> redis;

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Pages.class)
    static class Instance {}

    @RestController
    static class Pages {

        @GetMapping("/api/hello")
        String hello() {
            return "hello";
        }

        @GetMapping("/page")
        String page() {
            return "page";
        }
    }

    @BeforeEach
    void flush() {
        SharedRedis.flush();
        this.client = SharedRedis.endpoint().newClient();
        this.redis = this.client.connect();
    }

    @AfterEach
    void disconnect() {
        this.redis.close();
        this.client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }

    private ConfigurableApplicationContext start() {
        return new SpringApplicationBuilder(Instance.class)
                .initializers((context) -> context.getBeanFactory().registerSingleton("throttleTimeSource", this.clock))
                .properties(
                        "server.port=0",
                        "spring.data.redis.url=" + SharedRedis.endpoint().url(),
                        "throttle.store.type=redis",
                        "throttle.policies.api.algorithm=fixed-window",
                        "throttle.policies.api.limit=1",
                        "throttle.policies.api.window=1h",
                        "throttle.http.rules[0].paths=/api/**",
                        "throttle.http.rules[0].policy=api",
                        "throttle.http.rules[0].key=#ip",
                        "throttle.bans.abuse.after=3",
                        "throttle.bans.abuse.within=1m",
                        "throttle.bans.abuse.policies=api",
                        "throttle.bans.abuse.for=10m",
                        // the actuator on its own port, which the ban filter does not cover: the operator's
                        // address is the banned one here
                        "management.server.port=0",
                        "management.endpoints.web.exposure.include=throttlebans",
                        "management.endpoint.throttlebans.access=unrestricted",
                        "spring.main.banner-mode=off")
                .run();
    }

    @Test
    void refusalsOnOneInstanceBanTheKeyOnAnotherWhichRefusesWithoutARedisCommand() throws Exception {
        try (ConfigurableApplicationContext a = start();
                ConfigurableApplicationContext b = start()) {
            assertThat(send(b, "GET", "/page").statusCode()).isEqualTo(200);
            assertThat(send(a, "GET", "/api/hello").statusCode()).isEqualTo(200);
            for (int i = 0; i < 3; i++) {
                assertThat(send(a, "GET", "/api/hello").statusCode()).isEqualTo(429);
            }
            assertThat(send(a, "GET", "/page").statusCode())
                    .as("banned on A at once")
                    .isEqualTo(429);
            Eventually.until(
                    "B hears the ban", () -> !b.getBean(Bans.class).active().isEmpty());

            try (RedisMonitor monitor = new RedisMonitor(SharedRedis.endpoint())) {
                this.redis.sync().echo("start");
                monitor.awaitMarker("start");
                monitor.clear();
                HttpResponse<String> banned = send(b, "GET", "/page");
                HttpResponse<String> again = send(b, "GET", "/api/hello");
                this.redis.sync().echo("end");
                monitor.awaitMarker("end");
                assertThat(banned.statusCode()).isEqualTo(429);
                assertThat(banned.headers().firstValue("Retry-After")).hasValue("600");
                assertThat(banned.body()).contains("\"ban\":\"abuse\"");
                assertThat(again.statusCode()).isEqualTo(429);
                List<String> commands = monitor.commands().stream()
                        .map(RedisMonitor.Command::name)
                        .toList();
                assertThat(commands)
                        .as("no Redis command for either banned request: only the end marker")
                        .containsExactly("ECHO");
            }
        }
    }

    @Test
    void anInstanceStartedLaterHoldsTheBanBeforeItServesAndALiftThroughItsActuatorReachesTheOther() throws Exception {
        try (ConfigurableApplicationContext a = start()) {
            send(a, "GET", "/api/hello");
            for (int i = 0; i < 3; i++) {
                send(a, "GET", "/api/hello");
            }
            assertThat(send(a, "GET", "/page").statusCode()).isEqualTo(429);
            try (ConfigurableApplicationContext later = start()) {
                assertThat(send(later, "GET", "/page").statusCode())
                        .as("read from Redis at startup")
                        .isEqualTo(429);
                assertThat(send(later, "local.management.port", "DELETE", "/actuator/throttlebans/abuse/127.0.0.1")
                                .statusCode())
                        .as("lifted through the actuator")
                        .isEqualTo(200);
                assertThat(send(later, "GET", "/page").statusCode()).isEqualTo(200);
                Eventually.until(
                        "A hears the lift", () -> send(a, "GET", "/page").statusCode() == 200);
            }
        }
    }

    @Test
    void aBanEndsOnTimeOnEveryInstance() throws Exception {
        try (ConfigurableApplicationContext a = start();
                ConfigurableApplicationContext b = start()) {
            a.getBean(Bans.class).start("abuse", "127.0.0.1", Duration.ofMinutes(5));
            Eventually.until("B hears the ban", () -> send(b, "GET", "/page").statusCode() == 429);
            this.clock.advance(Duration.ofMinutes(5).minusSeconds(1));
            assertThat(send(a, "GET", "/page").headers().firstValue("Retry-After"))
                    .hasValue("1");
            assertThat(send(b, "GET", "/page").headers().firstValue("Retry-After"))
                    .hasValue("1");
            this.clock.advance(Duration.ofSeconds(1));
            assertThat(send(a, "GET", "/page").statusCode()).isEqualTo(200);
            assertThat(send(b, "GET", "/page").statusCode()).isEqualTo(200);
            try (ConfigurableApplicationContext later = start()) {
                assertThat(later.getBean(Bans.class).active())
                        .as("an ended ban is not read")
                        .isEmpty();
            }
        }
    }

    @Test
    void aBanAddedThroughOneInstancesActuatorIsRefusedByTheOther() throws Exception {
        try (ConfigurableApplicationContext a = start();
                ConfigurableApplicationContext b = start()) {
            HttpResponse<String> added = post(a, "/actuator/throttlebans/abuse/127.0.0.1", "{\"duration\": \"90s\"}");
            assertThat(added.statusCode()).isEqualTo(200);
            Eventually.until("B hears the ban", () -> send(b, "GET", "/page").statusCode() == 429);
            assertThat(send(b, "GET", "/page").headers().firstValue("Retry-After"))
                    .hasValue("90");
            assertThat(send(b, "local.management.port", "GET", "/actuator/throttlebans")
                            .body())
                    .contains("\"key\":\"127.0.0.1\"");
        }
    }

    @Test
    void anInstanceThatLostTheChannelReadsTheBansAgainSoThatALiftItMissedStillReachesIt() throws Exception {
        LettuceConnectionFactory factory = SharedRedis.endpoint().newConnectionFactory();
        RedisSharedBans writer = new RedisSharedBans(factory, "throttle");
        try (ConfigurableApplicationContext a = start()) {
            a.getBean(Bans.class).start("abuse", "127.0.0.1", Duration.ofMinutes(5));
            Eventually.until(
                    "the ban is stored",
                    () -> !writer.loadAll(this.clock.currentTimeMillis()).isEmpty());
            this.redis.sync().clientKill(KillArgs.Builder.typePubsub());
            writer.lift("abuse", "127.0.0.1").toCompletableFuture().join();
            Eventually.until(
                    "A drops the lifted ban", () -> send(a, "GET", "/page").statusCode() == 200);
            writer.save(
                            new ActiveBan(
                                    "abuse", "127.0.0.1", this.clock.instant().plus(Duration.ofMinutes(1))),
                            this.clock.currentTimeMillis())
                    .toCompletableFuture()
                    .join();
            Eventually.until(
                    "A hears a later ban", () -> send(a, "GET", "/page").statusCode() == 429);
        } finally {
            writer.close();
            factory.destroy();
        }
    }

    private static HttpResponse<String> post(ConfigurableApplicationContext app, String path, String json) {
        int port = Integer.parseInt(app.getEnvironment().getProperty("local.management.port"));
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json))
                .build();
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (Exception ex) {
            throw new IllegalStateException(ex);
        }
    }

    static HttpResponse<String> send(ConfigurableApplicationContext app, String method, String path) {
        return send(app, "local.server.port", method, path);
    }

    static HttpResponse<String> send(
            ConfigurableApplicationContext app, String portProperty, String method, String path) {
        int port = Integer.parseInt(app.getEnvironment().getProperty(portProperty));
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(10))
                .method(method, HttpRequest.BodyPublishers.noBody())
                .build();
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (Exception ex) {
            throw new IllegalStateException(ex);
        }
    }
}
