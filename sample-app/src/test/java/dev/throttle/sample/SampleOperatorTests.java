package dev.throttle.sample;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.memory.MemoryThrottleStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;

/**
 * The operator walk-through of docs/sample-app.md on the sample app, through a real port: with
 * {@code --management.endpoints.web.exposure.include=throttle,metrics} and
 * {@code --management.endpoint.throttle.access=unrestricted}, an operator peeks at a locked-out
 * user, unlocks them (they sign in at once) and reads {@code throttle.decisions}; without the
 * access flag the unlock is refused; and it all holds when the app is started with a
 * configuration file of the user's own instead of its {@code application.yml}.
 */
class SampleOperatorTests {

    static final String EXPOSE = "--management.endpoints.web.exposure.include=throttle,metrics";

    static final String UNLOCK = "--management.endpoint.throttle.access=unrestricted";

    private static final HttpClient client = HttpClient.newHttpClient();

    static HttpResponse<String> send(int port, String method, String path, String json) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://localhost:" + port + path));
        if (json != null) {
            request.header("Content-Type", "application/json")
                    .method(method, HttpRequest.BodyPublishers.ofString(json));
        } else {
            request.method(method, HttpRequest.BodyPublishers.noBody());
        }
        return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    static HttpResponse<String> login(int port, String password) throws Exception {
        return send(port, "POST", "/api/login", "{\"email\":\"alice@example.com\",\"password\":\"" + password + "\"}");
    }

    /** A wrong password, and then the right one refused: Alice is locked out. */
    static void lockOutAlice(int port) throws Exception {
        assertThat(login(port, "guess").statusCode()).isEqualTo(401);
        assertThat(login(port, "wonderland").statusCode()).as("locked out").isEqualTo(429);
    }

    /** Peek, unlock, sign in at once, and read the decisions: what docs/sample-app.md walks through. */
    static void peekUnlockAndCount(int port) throws Exception {
        lockOutAlice(port);
        HttpResponse<String> peek = send(port, "GET", "/actuator/throttle/login/alice@example.com", null);
        assertThat(peek.statusCode()).isEqualTo(200);
        assertThat(peek.body()).contains("\"policy\":\"login\"").contains("\"allowed\":false");

        HttpResponse<String> unlock = send(port, "DELETE", "/actuator/throttle/login/alice@example.com", null);
        assertThat(unlock.statusCode()).isEqualTo(200);
        assertThat(unlock.body()).contains("\"reset\":true");
        assertThat(login(port, "wonderland").statusCode())
                .as("signs in at once")
                .isEqualTo(200);

        HttpResponse<String> decisions = send(port, "GET", "/actuator/metrics/throttle.decisions", null);
        assertThat(decisions.statusCode()).isEqualTo(200);
        assertThat(decisions.body())
                .contains("\"name\":\"throttle.decisions\"")
                .contains("\"statistic\":\"COUNT\"")
                .contains("\"tag\":\"policy\"")
                .contains("\"login\"")
                .contains("\"rejected\"");
        HttpResponse<String> rejected =
                send(port, "GET", "/actuator/metrics/throttle.decisions?tag=policy:login&tag=outcome:rejected", null);
        assertThat(rejected.statusCode()).isEqualTo(200);
        assertThat(rejected.body()).contains("{\"statistic\":\"COUNT\",\"value\":1.0}");
    }

    @Nested
    @SpringBootTest(
            webEnvironment = WebEnvironment.RANDOM_PORT,
            args = {EXPOSE, UNLOCK})
    @Import(ManualClockConfiguration.class)
    class WithTheEndpointExposedAndUnlocked {

        @LocalServerPort
        int port;

        @Autowired
        MemoryThrottleStore store;

        @BeforeEach
        void startClean() {
            this.store.clear();
        }

        @Test
        void anOperatorPeeksUnlocksAndCountsTheDecisions() throws Exception {
            peekUnlockAndCount(this.port);
        }
    }

    @Nested
    @SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT, args = EXPOSE)
    @Import(ManualClockConfiguration.class)
    class WithoutTheAccessFlag {

        @LocalServerPort
        int port;

        @Autowired
        MemoryThrottleStore store;

        @BeforeEach
        void startClean() {
            this.store.clear();
        }

        @Test
        void peekingWorksButUnlockingIsRefused() throws Exception {
            lockOutAlice(this.port);
            assertThat(send(this.port, "GET", "/actuator/throttle/login/alice@example.com", null)
                            .statusCode())
                    .isEqualTo(200);
            assertThat(send(this.port, "DELETE", "/actuator/throttle/login/alice@example.com", null)
                            .statusCode())
                    .isEqualTo(405);
            assertThat(login(this.port, "wonderland").statusCode())
                    .as("still locked out")
                    .isEqualTo(429);
        }
    }

    @Nested
    class StartedWithItsOwnConfigurationFile {

        @TempDir
        Path directory;

        @Test
        void theWalkThroughWorksWithTheReadmesMyThrottleYml() throws Exception {
            // the file of docs/sample-app.md, word for word: only the four policies
            Path file = Files.writeString(this.directory.resolve("my-throttle.yml"), """
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
					    reports:
					      algorithm: concurrency
					      limit: 1
					      lease: 30s
					""");
            try (ConfigurableApplicationContext context = new SpringApplicationBuilder(SampleApplication.class)
                    .run("--server.port=0", "--spring.config.location=file:" + file, EXPOSE, UNLOCK)) {
                int port =
                        ((WebServerApplicationContext) context).getWebServer().getPort();
                peekUnlockAndCount(port);
                HttpResponse<String> malformed = send(port, "POST", "/api/login", "{\"email\":");
                assertThat(malformed.statusCode()).isEqualTo(400);
                assertThat(malformed.headers().firstValue("Content-Type"))
                        .as("problem details, as with application.yml")
                        .hasValue("application/problem+json");
            }
        }
    }
}
