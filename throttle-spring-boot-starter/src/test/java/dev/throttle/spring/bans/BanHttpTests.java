package dev.throttle.spring.bans;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.spring.metrics.BanMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * A ban on Spring MVC, through a real port: refusals of a listed policy ban the client address, and
 * then every request of that address is refused before anything runs, an unthrottled page included,
 * with 429, {@code Retry-After} = the remaining ban and a problem body naming the ban; the ban ends
 * on time by the application's clock.
 */
@SpringBootTest(
        classes = BanHttpTests.App.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.policies.api.algorithm=fixed-window",
            "throttle.policies.api.limit=1",
            "throttle.policies.api.window=1h",
            "throttle.policies.other.algorithm=fixed-window",
            "throttle.policies.other.limit=1",
            "throttle.policies.other.window=1h",
            "throttle.http.rules[0].paths=/api/**",
            "throttle.http.rules[0].policy=api",
            "throttle.http.rules[0].key=#ip",
            "throttle.http.rules[1].paths=/other/**",
            "throttle.http.rules[1].policy=other",
            "throttle.http.rules[1].key=#ip",
            "throttle.bans.abuse.after=3",
            "throttle.bans.abuse.within=1m",
            "throttle.bans.abuse.policies=api",
            "throttle.bans.abuse.for=10m",
            "management.endpoints.web.exposure.include=throttlebans",
            "management.endpoint.throttlebans.access=unrestricted"
        })
class BanHttpTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    @LocalServerPort
    int port;

    @Autowired
    ManualTimeSource clock;

    @Autowired
    Bans bans;

    @Autowired
    MeterRegistry registry;

    @BeforeEach
    void noBanNorCount() {
        this.bans.active().forEach((ban) -> this.bans.lift(ban.ban(), ban.key()));
        this.clock.advance(Duration.ofHours(2));
    }

    @Test
    void theAfterthRefusalOfAListedPolicyBansTheAddressFromEveryPageUntilTheBanEnds() throws Exception {
        assertThat(get("/api/hello").statusCode()).isEqualTo(200);
        assertThat(get("/api/hello").statusCode()).isEqualTo(429);
        assertThat(get("/api/hello").statusCode()).isEqualTo(429);
        assertThat(get("/page").statusCode()).isEqualTo(200);
        assertThat(get("/api/hello").statusCode()).isEqualTo(429);

        HttpResponse<String> banned = get("/page");
        assertThat(banned.statusCode()).isEqualTo(429);
        assertThat(banned.headers().firstValue("Retry-After")).hasValue("600");
        assertThat(banned.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(banned.body())
                .contains("\"status\":429")
                .contains("\"ban\":\"abuse\"")
                .contains("refused for 600 more seconds")
                .doesNotContain("127.0.0.1");

        assertThat(this.registry
                        .get(BanMetrics.STARTED)
                        .tag("ban", "abuse")
                        .counter()
                        .count())
                .isEqualTo(1);
        assertThat(this.registry
                        .get(BanMetrics.REFUSED)
                        .tag("ban", "abuse")
                        .counter()
                        .count())
                .isGreaterThanOrEqualTo(1);

        this.clock.advance(Duration.ofMinutes(9).plusSeconds(59));
        HttpResponse<String> lastSecond = get("/page");
        assertThat(lastSecond.statusCode()).isEqualTo(429);
        assertThat(lastSecond.headers().firstValue("Retry-After")).hasValue("1");

        this.clock.advance(Duration.ofSeconds(1));
        assertThat(get("/page").statusCode()).isEqualTo(200);
        assertThat(this.bans.active()).isEmpty();
    }

    @Test
    void refusalsOfAPolicyTheBanDoesNotListAreNotCounted() throws Exception {
        for (int i = 0; i < 6; i++) {
            get("/other/thing");
        }
        assertThat(get("/other/thing").statusCode()).isEqualTo(429);
        assertThat(get("/page").statusCode()).isEqualTo(200);
        assertThat(this.bans.active()).isEmpty();
    }

    @Test
    void refusalsSpreadOverMoreThanTheWindowDoNotBan() throws Exception {
        get("/api/hello");
        get("/api/hello");
        get("/api/hello");
        this.clock.advance(Duration.ofMinutes(1));
        get("/api/hello");
        assertThat(get("/page").statusCode()).isEqualTo(200);
    }

    @Test
    void aBanAddedByHandRefusesAtOnceAndALiftEndsIt() throws Exception {
        this.bans.start("abuse", "127.0.0.1", Duration.ofSeconds(30));
        HttpResponse<String> banned = get("/page");
        assertThat(banned.statusCode()).isEqualTo(429);
        assertThat(banned.headers().firstValue("Retry-After")).hasValue("30");
        this.bans.lift("abuse", "127.0.0.1").toCompletableFuture().join();
        assertThat(get("/page").statusCode()).isEqualTo(200);
    }

    @Test
    void theActuatorListsAddsAndLiftsBans() throws Exception {
        // another address than the test's own: a banned address is refused on every request, the actuator's too
        HttpResponse<String> added = send("POST", "/actuator/throttlebans/abuse/203.0.113.9", "{\"duration\": \"2m\"}");
        assertThat(added.statusCode()).isEqualTo(200);
        assertThat(added.body()).contains("\"ban\":\"abuse\"").contains("\"remaining-seconds\":120");
        assertThat(this.bans.find("abuse", "203.0.113.9")).isNotNull();

        String listed = send("GET", "/actuator/throttlebans", null).body();
        assertThat(listed)
                .contains("\"configured\":{\"abuse\":{\"after\":3,\"within\":\"PT1M\",\"policies\":[\"api\"],"
                        + "\"for\":\"PT10M\",\"status\":429}}")
                .contains("\"key\":\"203.0.113.9\"");

        HttpResponse<String> lifted = send("DELETE", "/actuator/throttlebans/abuse/203.0.113.9", null);
        assertThat(lifted.statusCode()).isEqualTo(200);
        assertThat(lifted.body()).isEqualTo("{\"ban\":\"abuse\",\"lifted\":true,\"was-active\":true}");
        assertThat(this.bans.find("abuse", "203.0.113.9")).isNull();
        assertThat(send("GET", "/actuator/throttlebans", null).body()).contains("\"active\":[]");

        HttpResponse<String> asConfigured =
                send("POST", "/actuator/throttlebans/abuse/203.0.113.10", "{\"for\": \"3m\"}");
        assertThat(asConfigured.statusCode())
                .as("the length named as configuration names it")
                .isEqualTo(200);
        assertThat(asConfigured.body()).contains("\"remaining-seconds\":180");
        assertThat(send("POST", "/actuator/throttlebans/abuse/203.0.113.11", "{\"for\": \"soon\"}")
                        .statusCode())
                .isEqualTo(400);
    }

    @Test
    void anAddressTypedInAnyOfItsSpellingsBansTheKeyItsRequestsGet() throws Exception {
        assertThat(send("POST", "/actuator/throttlebans/abuse/2001:db8:0:0:1:2:3:4", "{\"duration\": \"2m\"}")
                        .body())
                .as("an IPv6 address is banned as its /64 network, the key its requests get")
                .contains("\"key\":\"2001:db8::\"");
        assertThat(this.bans.find("abuse", "2001:db8::")).isNotNull();
        send("POST", "/actuator/throttlebans/abuse/::ffff:203.0.113.20", "{\"duration\": \"2m\"}");
        assertThat(this.bans.find("abuse", "203.0.113.20")).isNotNull();
        send("POST", "/actuator/throttlebans/abuse/203.000.113.021", "{\"duration\": \"2m\"}");
        assertThat(this.bans.find("abuse", "203.0.113.21")).isNotNull();

        send("POST", "/actuator/throttlebans/abuse/203.0.113.22:8080", "{\"duration\": \"2m\"}");
        assertThat(this.bans.find("abuse", "203.0.113.22"))
                .as("an address with its port, as access logs write it")
                .isNotNull();
        send("POST", "/actuator/throttlebans/abuse/%5B2001:db9::1%5D:443", "{\"duration\": \"2m\"}");
        assertThat(this.bans.find("abuse", "2001:db9::")).isNotNull();

        assertThat(send("DELETE", "/actuator/throttlebans/abuse/2001:DB8::ffff", null)
                        .body())
                .as("lifted by another address of the same network")
                .contains("\"was-active\":true");
        assertThat(this.bans.find("abuse", "2001:db8::")).isNull();
    }

    @Test
    void aBannedAddressIsRefusedOnTheActuatorToo() throws Exception {
        this.bans.start("abuse", "127.0.0.1", Duration.ofMinutes(1));
        assertThat(send("GET", "/actuator/throttlebans", null).statusCode()).isEqualTo(429);
    }

    @Test
    void theActuatorRefusesAnUnknownBanAndADurationThatIsNone() throws Exception {
        assertThat(send("POST", "/actuator/throttlebans/nope/127.0.0.1", "{\"duration\": \"2m\"}")
                        .statusCode())
                .isEqualTo(404);
        HttpResponse<String> bad = send("POST", "/actuator/throttlebans/abuse/127.0.0.1", "{\"duration\": \"soon\"}");
        assertThat(bad.statusCode()).isEqualTo(400);
        assertThat(send("POST", "/actuator/throttlebans/abuse/127.0.0.1", "{\"duration\": \"0s\"}")
                        .statusCode())
                .isEqualTo(400);
        assertThat(send("POST", "/actuator/throttlebans/abuse/127.0.0.1", "{}").statusCode())
                .as("the duration is required")
                .isEqualTo(400);
        HttpResponse<String> bare = send("POST", "/actuator/throttlebans/abuse/127.0.0.1", "{\"duration\": 123}");
        assertThat(bare.statusCode())
                .as("a bare number, which would be milliseconds")
                .isEqualTo(400);
        assertThat(bare.body()).contains("'123' has no unit: write 123s, 123m or 123h");
        assertThat(send("POST", "/actuator/throttlebans/abuse/127.0.0.1", "{\"duration\": \"PT2562047788015215H\"}")
                        .statusCode())
                .as("too long to end: a 400, not a 500")
                .isEqualTo(400);
        assertThat(this.bans.active()).isEmpty();
    }

    private HttpResponse<String> send(String method, String path, String json) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + path));
        if (json != null) {
            request.header("Content-Type", "application/json")
                    .method(method, HttpRequest.BodyPublishers.ofString(json));
        } else {
            request.method(method, HttpRequest.BodyPublishers.noBody());
        }
        return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> get(String path) throws Exception {
        return client.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + path))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class App {

        @Bean
        ManualTimeSource throttleTimeSource() {
            return new ManualTimeSource(Instant.parse("2026-01-01T00:00:00Z"));
        }

        @RestController
        static class Pages {

            @GetMapping({"/api/hello", "/other/thing"})
            String hello() {
                return "hello";
            }

            @GetMapping("/page")
            String page() {
                return "page";
            }
        }
    }
}
