package dev.throttle.sample;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;
import org.springframework.test.annotation.DirtiesContext;

/**
 * The ban the sample ships ({@code abuse}): the 10th refusal of {@code api} or {@code login-ip} by one
 * address within a minute shuts that address out of every page for 10 minutes, as
 * docs/sample-app.md shows.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT)
@Import(ManualClockConfiguration.class)
@DirtiesContext
class SampleBanTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    @LocalServerPort
    int port;

    @Autowired
    ManualTimeSource clock;

    @Test
    void tenRefusalsOfTheApiBanTheAddressFromEveryPageForTenMinutes() throws Exception {
        this.clock.advance(Duration.ofHours(1));
        for (int i = 0; i < 10; i++) {
            assertThat(get("/api/hello", "free-key").statusCode()).isEqualTo(200);
        }
        for (int i = 0; i < 10; i++) {
            assertThat(get("/api/hello", "free-key").statusCode()).isEqualTo(429);
        }
        HttpResponse<String> banned = get("/", null);
        assertThat(banned.statusCode()).isEqualTo(429);
        assertThat(banned.headers().firstValue("Retry-After")).hasValue("600");
        assertThat(banned.body()).contains("\"ban\":\"abuse\"");
        assertThat(get("/api/hello", "pro-key").statusCode())
                .as("every request of the address, another API key's too")
                .isEqualTo(429);

        this.clock.advance(Duration.ofMinutes(10));
        assertThat(get("/", null).statusCode()).isEqualTo(200);
    }

    @Test
    void tenRefusedLoginsOfOneAddressBanItToo() throws Exception {
        this.clock.advance(Duration.ofHours(1));
        int refused = 0;
        for (int i = 0; i < 40 && refused < 10; i++) {
            // a new e-mail each time: only login-ip (20 attempts per address) refuses, never the lockout
            if (login("guess" + i + "@example.com").statusCode() == 429) {
                refused++;
            }
        }
        assertThat(refused).isEqualTo(10);
        HttpResponse<String> banned = get("/", null);
        assertThat(banned.statusCode()).isEqualTo(429);
        assertThat(banned.body()).contains("\"ban\":\"abuse\"");
        this.clock.advance(Duration.ofMinutes(10));
        assertThat(get("/", null).statusCode()).isEqualTo(200);
    }

    private HttpResponse<String> login(String email) throws Exception {
        return client.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + "/api/login"))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(
                                "{\"email\":\"" + email + "\",\"password\":\"wrong\"}"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> get(String path, String apiKey) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + path));
        if (apiKey != null) {
            request.header("X-Api-Key", apiKey);
        }
        return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }
}
