package dev.throttle.sample;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import java.net.CookieManager;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;

/**
 * The sample's Spring Security sign-ins through a real port, as a browser and an API client use
 * them: form login at {@code /login} (with its CSRF token) and HTTP Basic at {@code /api/me}, for
 * the demo users, throttled by {@code throttle.security.authentication} with the {@code login} and
 * {@code login-ip} policies, on a manual clock.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT)
@Import(ManualClockConfiguration.class)
@ExtendWith(OutputCaptureExtension.class)
class SampleSecurityTests {

    private static final Pattern CSRF = Pattern.compile("name=\"_csrf\"[^>]*value=\"([^\"]+)\"");

    @LocalServerPort
    int port;

    @Autowired
    ManualTimeSource clock;

    @Autowired
    MemoryThrottleStore store;

    private HttpClient browser;

    @BeforeEach
    void startClean() {
        this.store.clear();
        this.browser =
                HttpClient.newBuilder().cookieHandler(new CookieManager()).build();
    }

    /** Opens the login page for its CSRF token (and the session that holds it), then posts the form. */
    static HttpResponse<String> formLogin(HttpClient browser, int port, String email, String password)
            throws Exception {
        HttpResponse<String> page = browser.send(request(port, "/login").build(), HttpResponse.BodyHandlers.ofString());
        assertThat(page.statusCode()).isEqualTo(200);
        Matcher token = CSRF.matcher(page.body());
        assertThat(token.find())
                .as("the login form carries its CSRF token:\n" + page.body())
                .isTrue();
        String form =
                "username=" + encode(email) + "&password=" + encode(password) + "&_csrf=" + encode(token.group(1));
        return browser.send(
                request(port, "/login")
                        .header("Content-Type", "application/x-www-form-urlencoded")
                        .POST(HttpRequest.BodyPublishers.ofString(form))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> formLogin(String email, String password) throws Exception {
        return formLogin(this.browser, this.port, email, password);
    }

    private HttpResponse<String> basic(String email, String password) throws Exception {
        String credentials =
                Base64.getEncoder().encodeToString((email + ":" + password).getBytes(StandardCharsets.UTF_8));
        return get("/api/me", "Authorization", "Basic " + credentials);
    }

    private HttpResponse<String> get(String path, String... headers) throws Exception {
        HttpRequest.Builder request = request(this.port, path);
        if (headers.length > 0) {
            request.headers(headers);
        }
        return this.browser.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpRequest.Builder request(int port, String path) {
        return HttpRequest.newBuilder(URI.create("http://localhost:" + port + path));
    }

    private static String encode(String value) {
        return URLEncoder.encode(value, StandardCharsets.UTF_8);
    }

    private static String location(HttpResponse<String> response) {
        String location = response.headers().firstValue("Location").orElse("");
        return location.replaceFirst("^https?://[^/]+", "");
    }

    @Test
    void formLoginWrongPasswordsAreRefusedWith429AndTheRightPasswordAfterTheWaitSignsIn(CapturedOutput output)
            throws Exception {
        HttpResponse<String> wrong = formLogin("alice@example.com", "guess");
        assertThat(wrong.statusCode()).isEqualTo(302);
        assertThat(location(wrong)).isEqualTo("/login?error");

        HttpResponse<String> refused = formLogin("alice@example.com", "guess");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Location"))
                .as("never a redirect")
                .isEmpty();
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(refused.headers().firstValue("RateLimit-Policy")).hasValue("\"login\";q=1;w=3600");
        assertThat(refused.headers().firstValue("RateLimit")).hasValue("\"login\";r=0;t=1");
        assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(refused.body()).contains("\"violated-policies\":[\"login\"]").doesNotContain("alice");

        this.clock.advance(Duration.ofSeconds(1));
        assertThat(location(formLogin("alice@example.com", "guess"))).isEqualTo("/login?error");
        assertThat(formLogin("alice@example.com", "wonderland").headers().firstValue("Retry-After"))
                .as("the right password waits too")
                .hasValue("2");

        this.clock.advance(Duration.ofSeconds(2));
        HttpResponse<String> signedIn = formLogin("  ALICE@example.com ", "wonderland");
        assertThat(signedIn.statusCode()).isEqualTo(302);
        assertThat(location(signedIn)).isEqualTo("/account");
        HttpResponse<String> account = get("/account");
        assertThat(account.statusCode()).isEqualTo(200);
        assertThat(account.body()).contains("Signed in as <strong id=\"email\">alice@example.com</strong>");
        assertThat(location(formLogin("alice@example.com", "guess")))
                .as("the success cleared the lockout")
                .isEqualTo("/login?error");
        assertThat(output.getAll()).doesNotContain("ERROR").doesNotContain("ThrottledException");
    }

    @Test
    void httpBasicWrongPasswordsAreRefusedWith429AndTheRightPasswordAfterTheWaitAnswersTheEmail() throws Exception {
        HttpResponse<String> wrong = basic("bob@example.com", "guess");
        assertThat(wrong.statusCode()).isEqualTo(401);
        assertThat(wrong.headers().firstValue("WWW-Authenticate"))
                .hasValueSatisfying((challenge) -> assertThat(challenge).startsWith("Basic realm=\"throttle-sample\""));

        HttpResponse<String> refused = basic("bob@example.com", "builder");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(refused.headers().firstValue("WWW-Authenticate")).isEmpty();
        assertThat(refused.body()).contains("\"status\":429").contains("\"violated-policies\":[\"login\"]");

        this.clock.advance(Duration.ofSeconds(1));
        HttpResponse<String> me = basic("bob@example.com", "builder");
        assertThat(me.statusCode()).isEqualTo(200);
        assertThat(me.body()).isEqualTo("{\"email\":\"bob@example.com\"}");
        assertThat(get("/api/me").statusCode())
                .as("no credentials, no session: asked for Basic")
                .isEqualTo(401);
    }

    @Test
    void anUnknownUserIsIndistinguishableFromADemoUser() throws Exception {
        List<String> known = attempts("alice@example.com");
        this.store.clear();
        List<String> unknown = attempts("mallory@example.com");
        assertThat(unknown)
                .isEqualTo(known)
                .containsExactly("302 /login?error", "429 1", "401 -", "429 2", "302 /login?error", "429 4");
    }

    private List<String> attempts(String email) throws Exception {
        List<String> seen = new ArrayList<>();
        seen.add(describe(formLogin(email, "guess")));
        seen.add(describe(basic(email, "guess")));
        this.clock.advance(Duration.ofSeconds(1));
        seen.add(describe(basic(email, "guess")));
        seen.add(describe(formLogin(email, "guess")));
        this.clock.advance(Duration.ofSeconds(2));
        seen.add(describe(formLogin(email, "guess")));
        seen.add(describe(basic(email, "guess")));
        return seen;
    }

    private static String describe(HttpResponse<String> response) {
        return (response.statusCode() == 302)
                ? "302 " + location(response)
                : response.statusCode() + " "
                        + response.headers().firstValue("Retry-After").orElse("-");
    }

    @Test
    void formLoginAndTheJsonApiShareOneLockout() throws Exception {
        HttpResponse<String> api = this.browser.send(
                request(this.port, "/api/login")
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(
                                "{\"email\":\"alice@example.com\",\"password\":\"guess\"}"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(api.statusCode()).isEqualTo(401);
        assertThat(formLogin("alice@example.com", "wonderland").statusCode()).isEqualTo(429);
        assertThat(basic("Alice@Example.com", "wonderland").statusCode()).isEqualTo(429);
    }

    @Test
    void oneAddressGetsTwentyAttemptsAcrossAllAccountsThenWaitsWhicheverWayItSignsIn() throws Exception {
        for (int i = 0; i < 10; i++) {
            assertThat(formLogin("user" + i + "@example.com", "guess").statusCode())
                    .isEqualTo(302);
            assertThat(basic("other" + i + "@example.com", "guess").statusCode())
                    .isEqualTo(401);
        }
        HttpResponse<String> refused = basic("someone@example.com", "guess");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.body()).contains("\"violated-policies\":[\"login-ip\"]");
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("30");
        assertThat(formLogin("alice@example.com", "wonderland").statusCode()).isEqualTo(429);
        this.clock.advance(Duration.ofSeconds(30));
        assertThat(basic("someone@example.com", "guess").statusCode())
                .as("the refused e-mail's lockout was given back when login-ip refused")
                .isEqualTo(401);
    }

    @Test
    void theLoginPageAndTheAccountPageAreWhereTheyShouldBe() throws Exception {
        HttpResponse<String> page = get("/login");
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.body())
                .contains("name=\"username\"")
                .contains("name=\"password\"")
                .contains("name=\"_csrf\"");
        HttpResponse<String> account = get("/account", "Accept", "text/html");
        assertThat(account.statusCode()).as("not signed in").isEqualTo(302);
        assertThat(location(account)).isEqualTo("/login");
        assertThat(get("/api/hello").statusCode()).isEqualTo(200);
        assertThat(get("/").statusCode()).isEqualTo(200);
    }

    @Test
    void aFormPostWithoutItsCsrfTokenIsRefusedBeforeItIsCharged() throws Exception {
        for (int i = 0; i < 3; i++) {
            HttpResponse<String> forged = this.browser.send(
                    request(this.port, "/login")
                            .header("Content-Type", "application/x-www-form-urlencoded")
                            .POST(HttpRequest.BodyPublishers.ofString("username=alice%40example.com&password=guess"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(forged.statusCode()).isEqualTo(403);
        }
        assertThat(location(formLogin("alice@example.com", "wonderland"))).isEqualTo("/account");
    }

    @Test
    void startedWithAConfigurationFileOfItsOwnTheSignInsAreThrottledToo(@TempDir Path directory) throws Exception {
        Path file = directory.resolve("my-throttle.yml");
        Files.writeString(file, """
				throttle:
				  policies:
				    login:
				      algorithm: lockout
				      timeouts: 5s,1m,10m
				      reset-on-success: true
				    login-ip:
				      algorithm: token-bucket
				      capacity: 5
				      refill-period: 1m
				    api:
				      algorithm: fixed-window
				      limit: 2
				      window: 10s
				""");
        try (ConfigurableApplicationContext app = new SpringApplication(SampleApplication.class)
                .run("--server.port=0", "--spring.config.location=file:" + file)) {
            int port = ((WebServerApplicationContext) app).getWebServer().getPort();
            HttpClient client =
                    HttpClient.newBuilder().cookieHandler(new CookieManager()).build();
            assertThat(formLogin(client, port, "alice@example.com", "guess").statusCode())
                    .isEqualTo(302);
            HttpResponse<String> refused = formLogin(client, port, "alice@example.com", "wonderland");
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.headers().firstValue("Retry-After").map(Long::parseLong))
                    .as("the first rung, 5 s, less what a busy machine took between the two posts")
                    .hasValueSatisfying((seconds) -> assertThat(seconds).isBetween(1L, 5L));
        }
    }
}
