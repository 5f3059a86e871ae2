package dev.throttle.sample;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Locale;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;

/**
 * The sample app through a real port, as docs/sample-app.md walks through it, on a manual clock.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT)
@Import(ManualClockConfiguration.class)
class SampleApplicationTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    @LocalServerPort
    int port;

    @Autowired
    ManualTimeSource clock;

    @Autowired
    MemoryThrottleStore store;

    @BeforeEach
    void startClean() {
        this.store.clear();
    }

    private HttpResponse<String> login(String body) throws Exception {
        return post("application/json", body);
    }

    private HttpResponse<String> login(String email, String password) throws Exception {
        return login("{\"email\":\"" + email + "\",\"password\":\"" + password + "\"}");
    }

    private HttpResponse<String> post(String contentType, String body) throws Exception {
        return client.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + "/api/login"))
                        .header("Content-Type", contentType)
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> get(String path) throws Exception {
        return client.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + path))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void theLockoutKeyIgnoresCaseAndSpacesWhateverTheServersLocale() throws Exception {
        Locale before = Locale.getDefault();
        // in Turkish, "I".toLowerCase() is a dotless i: "ALICE" would not become "alice"
        Locale.setDefault(Locale.forLanguageTag("tr-TR"));
        try {
            assertThat(login("  ALICE@EXAMPLE.COM ", "nope").statusCode()).isEqualTo(401);
            assertThat(login("alice@example.com", "nope").statusCode())
                    .as("the same account, still locked")
                    .isEqualTo(429);
        } finally {
            Locale.setDefault(before);
        }
    }

    @Test
    void wrongPasswordsLockTheAccountOutForLongerEachTimeAndTheRightPasswordClearsIt() throws Exception {
        HttpResponse<String> wrong = login("alice@example.com", "nope");
        assertThat(wrong.statusCode()).isEqualTo(401);
        assertThat(wrong.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(wrong.body()).contains("\"status\":401");

        HttpResponse<String> locked = login("alice@example.com", "nope");
        assertThat(locked.statusCode()).isEqualTo(429);
        assertThat(locked.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(locked.headers().firstValue("RateLimit-Policy")).hasValue("\"login\";q=1;w=3600");
        assertThat(locked.headers().firstValue("RateLimit"))
                .as("the wait for the next attempt, not the state's hour")
                .hasValue("\"login\";r=0;t=1");
        assertThat(locked.body())
                .contains("\"violated-policies\":[\"login\"]")
                .contains("https://iana.org/assignments/http-problem-types#quota-exceeded")
                .doesNotContain("alice");

        this.clock.advance(Duration.ofSeconds(1));
        assertThat(login("alice@example.com", "nope").statusCode()).isEqualTo(401);
        assertThat(login("alice@example.com", "wonderland").headers().firstValue("Retry-After"))
                .hasValue("2");

        this.clock.advance(Duration.ofSeconds(2));
        HttpResponse<String> signedIn = login("alice@example.com", "wonderland");
        assertThat(signedIn.statusCode()).isEqualTo(200);
        assertThat(signedIn.body()).isEqualTo("{\"email\":\"alice@example.com\"}");
        assertThat(login("alice@example.com", "nope").statusCode())
                .as("success cleared the lockout")
                .isEqualTo(401);
    }

    @Test
    void theLockoutKeyIsTheEmailTrimmedAndLowerCased() throws Exception {
        assertThat(login("alice@example.com", "nope").statusCode()).isEqualTo(401);
        assertThat(login("  ALICE@Example.com ", "wonderland").statusCode()).isEqualTo(429);
        assertThat(login("bob@example.com", "builder").statusCode()).isEqualTo(200);
    }

    @Test
    void oneAddressGetsTwentyAttemptsAcrossAllAccountsThenWaits() throws Exception {
        for (int i = 0; i < 20; i++) {
            assertThat(login("user" + i + "@example.com", "guess").statusCode()).isEqualTo(401);
        }
        HttpResponse<String> refused = login("someone@example.com", "guess");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.body()).contains("\"violated-policies\":[\"login-ip\"]");
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("30");
        assertThat(login("someone@example.com", "guess").statusCode()).isEqualTo(429);
        this.clock.advance(Duration.ofSeconds(30));
        assertThat(login("someone@example.com", "guess").statusCode())
                .as("the refused e-mail's lockout was given back when login-ip refused")
                .isEqualTo(401);
    }

    @Test
    void badRequestsGetClientErrorsNeverServerErrors() throws Exception {
        assertThat(login("{\"email\":").statusCode()).isEqualTo(400);
        assertThat(login("{\"email\":\"alice@example.com\"}").statusCode()).isEqualTo(400);
        assertThat(login("{\"email\":\"   \",\"password\":\"x\"}").statusCode()).isEqualTo(400);
        assertThat(login("[]").statusCode()).isEqualTo(400);
        assertThat(login("{\"email\":42,\"password\":{}}").statusCode()).isEqualTo(400);
        assertThat(post("text/plain", "alice").statusCode()).isEqualTo(415);
        assertThat(login("nobody@example.com", "x").statusCode()).isEqualTo(401);
        assertThat(login("x".repeat(5000) + "@example.com", "x").statusCode()).isEqualTo(401);
    }

    @Test
    void helloIsThrottledPerAddressWithRateLimitHeaders() throws Exception {
        HttpResponse<String> hello = get("/api/hello");
        assertThat(hello.statusCode()).isEqualTo(200);
        assertThat(hello.body()).isEqualTo("{\"message\":\"Hello!\"}");
        assertThat(hello.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=100;w=60");
        assertThat(hello.headers().firstValue("RateLimit")).hasValue("\"api\";r=99;t=1");
    }

    private HttpResponse<String> hello(String apiKey) throws Exception {
        return client.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + "/api/hello"))
                        .header("X-Api-Key", apiKey)
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void helloWithADemoApiKeyIsThrottledPerKeyUnderItsPlan() throws Exception {
        HttpResponse<String> free = hello("free-key");
        assertThat(free.statusCode()).isEqualTo(200);
        assertThat(free.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=10;w=60");
        assertThat(free.headers().firstValue("RateLimit")).hasValue("\"api\";r=9;t=6");
        HttpResponse<String> pro = hello("pro-key");
        assertThat(pro.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=1000;w=60");
        assertThat(pro.headers().firstValue("RateLimit")).as("a key of its own").hasValue("\"api\";r=999;t=1");
        for (int i = 0; i < 9; i++) {
            assertThat(hello("free-key").statusCode()).isEqualTo(200);
        }
        assertThat(hello("free-key").statusCode()).isEqualTo(429);
        assertThat(get("/api/hello").headers().firstValue("RateLimit"))
                .as("the address is not the key")
                .hasValue("\"api\";r=99;t=1");
    }

    @Test
    void helloWithAKeyTheApplicationDoesNotKnowSharesTheAddressBucket() throws Exception {
        HttpResponse<String> other = hello("someone-else");
        assertThat(other.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=100;w=60");
        assertThat(other.headers().firstValue("RateLimit")).hasValue("\"api\";r=99;t=1");
        assertThat(hello("made-up-" + 1).headers().firstValue("RateLimit"))
                .as("a made-up key buys no bucket of its own")
                .hasValue("\"api\";r=98;t=1");
        assertThat(get("/api/hello").headers().firstValue("RateLimit")).hasValue("\"api\";r=97;t=1");
    }

    @Test
    void healthIsUpOnTheMemoryStoreWithoutARedisRunning() throws Exception {
        HttpResponse<String> health = get("/actuator/health");
        assertThat(health.statusCode()).isEqualTo(200);
        assertThat(health.body()).contains("\"status\":\"UP\"");
    }

    @Test
    void theLoginPageIsServedAtTheRoot() throws Exception {
        HttpResponse<String> page = get("/");
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.body()).contains("<form id=\"login\"").contains("Retry-After");
    }
}
