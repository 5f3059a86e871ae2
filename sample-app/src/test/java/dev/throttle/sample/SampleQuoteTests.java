package dev.throttle.sample;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@code GET /api/quote} through a real port, calling the sample's own stand-in API
 * ({@code /upstream/quote}) through the outgoing client {@code quotes}: 4 calls per 10 s go out at
 * once, the next waits for its turn (2.5 s, within the client's 3 s), the one after is a 503 with
 * {@code Retry-After} and never reaches the API; when the API itself refuses (429 with
 * {@code Retry-After}), its answer is passed on and the calls after it are not sent until the pause
 * ends. On a port chosen before the start, since the default upstream URL names the server's port;
 * on a manual clock, so that the four calls at once are at once however slow the machine.
 */
@SpringBootTest(webEnvironment = WebEnvironment.DEFINED_PORT)
@Import(ManualClockConfiguration.class)
class SampleQuoteTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    private static final int PORT = freePort();

    @DynamicPropertySource
    static void port(DynamicPropertyRegistry registry) {
        registry.add("server.port", () -> PORT);
    }

    @Autowired
    MemoryThrottleStore store;

    @Autowired
    ManualTimeSource clock;

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException ex) {
            throw new IllegalStateException(ex);
        }
    }

    @BeforeEach
    void startClean() {
        this.store.clear();
        // past any pause the stand-in asked for in another test
        this.clock.advance(Duration.ofDays(2));
    }

    private static HttpResponse<String> get(String path) throws Exception {
        return client.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + PORT + path))
                        .header("Accept", "application/json")
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void quotesArePacedByTheUpstreamPolicyWaitingForATurnWithinThreeSecondsThen503() throws Exception {
        for (int i = 0; i < 4; i++) {
            HttpResponse<String> quote = get("/api/quote");
            assertThat(quote.statusCode()).isEqualTo(200);
            assertThat(quote.body()).contains("\"symbol\":\"THR\"").contains("\"price\"");
        }
        long start = System.nanoTime();
        assertThat(get("/api/quote").statusCode())
                .as("the fifth waits for its turn")
                .isEqualTo(200);
        assertThat(System.nanoTime() - start)
                .as("a turn 2.5 s after the first")
                .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(2_400));
        HttpResponse<String> refused = get("/api/quote");
        assertThat(refused.statusCode()).isEqualTo(503);
        assertThat(refused.headers().firstValueAsLong("Retry-After").orElseThrow())
                .isBetween(1L, 10L);
        assertThat(refused.body()).contains("client 'quotes'");
    }

    @Test
    void theApisOwn429IsPassedOnAndPausesTheCallsAfterIt() throws Exception {
        for (int i = 0; i < 5; i++) {
            assertThat(get("/upstream/quote").statusCode())
                    .as("someone else uses up the API")
                    .isEqualTo(200);
        }
        HttpResponse<String> passedOn = get("/api/quote");
        assertThat(passedOn.statusCode()).as(passedOn.body()).isEqualTo(429);
        long retryAfter = passedOn.headers().firstValueAsLong("Retry-After").orElseThrow();
        assertThat(retryAfter).isBetween(1L, 10L);
        if (retryAfter > 3) {
            HttpResponse<String> paused = get("/api/quote");
            assertThat(paused.statusCode())
                    .as("paused longer than the client waits")
                    .isEqualTo(503);
            assertThat(paused.headers().firstValueAsLong("Retry-After").orElseThrow())
                    .isBetween(retryAfter - 1, retryAfter);
        }
    }
}
