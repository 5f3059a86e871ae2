package dev.throttle.spring.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.testing.Eventually;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A concurrency limit through a real WebFlux (Netty) port: a {@code Mono} holds its slot until it
 * completes or fails, a {@code Flux} until its stream ends, and a client that disconnects
 * mid-stream cancels the subscription, which releases the slot. A call that may wait for a slot
 * ({@code maxWait}) runs once one is released; a client that leaves while it waits takes none.
 */
@SpringBootTest(
        classes = WebFluxConcurrencyTests.SlotsApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.main.web-application-type=reactive",
            "throttle.policies.slots.algorithm=concurrency",
            "throttle.policies.slots.limit=1",
            "throttle.policies.slots.lease=30s"
        })
class WebFluxConcurrencyTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    @LocalServerPort
    int port;

    @Autowired
    MemoryThrottleStore store;

    @Autowired
    Throttler throttler;

    @BeforeEach
    void clearState() {
        this.store.clear();
    }

    private HttpRequest request(String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + path))
                .build();
    }

    private HttpResponse<String> get(String path) throws Exception {
        return client.send(request(path), HttpResponse.BodyHandlers.ofString());
    }

    private int status(String path) {
        try {
            return get(path).statusCode();
        } catch (Exception ex) {
            throw new IllegalStateException(ex);
        }
    }

    private int inUse(String user) {
        return 1 - this.throttler.peek("slots", user).remaining();
    }

    @Test
    void aMonoHoldsItsSlotUntilItCompletes() throws Exception {
        CompletableFuture<HttpResponse<String>> slow =
                client.sendAsync(request("/slow?user=ann&millis=1500"), HttpResponse.BodyHandlers.ofString());
        Eventually.until("the Mono holds its slot", () -> inUse("ann") == 1);
        HttpResponse<String> refused = get("/slow?user=ann&millis=0");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("RateLimit-Policy")).hasValue("\"slots\";q=1");
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(slow.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        Eventually.until("released", () -> inUse("ann") == 0);
        assertThat(get("/slow?user=ann&millis=0").statusCode()).isEqualTo(200);
        Eventually.until("released again", () -> inUse("ann") == 0);
    }

    @Test
    void aConditionalRequestAnsweredNotModifiedReleasesItsSlot() throws Exception {
        for (int i = 0; i < 4; i++) {
            HttpResponse<String> unchanged = client.send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + "/tagged?user=eve"))
                            .header("If-None-Match", "\"v1\"")
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(unchanged.statusCode())
                    .as("request %d: not modified, not refused for a slot its body never held", i + 1)
                    .isEqualTo(304);
            Eventually.until("released", () -> inUse("eve") == 0);
        }
        assertThat(get("/tagged?user=eve").body()).isEqualTo("ab");
        Eventually.until("released after its body", () -> inUse("eve") == 0);
    }

    /** Clients gone before their responses were written (the connection reset at once) hold no slot. */
    @ParameterizedTest
    @ValueSource(strings = {"/slow?user=fay&millis=50", "/tagged?user=fay"})
    void clientsGoneBeforeTheirResponsesHoldNoSlot(String path) throws Exception {
        for (int i = 0; i < 40; i++) {
            try (Socket socket = new Socket("127.0.0.1", this.port)) {
                socket.setSoLinger(true, 0);
                socket.getOutputStream()
                        .write(("GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n")
                                .getBytes(StandardCharsets.US_ASCII));
                socket.getOutputStream().flush();
                // reset at once, or a moment later: while the store decides, or between an entity and its body
                Thread.sleep(i % 5);
            }
        }
        // requests of the reset connections may still reach the handler for a moment (50 ms each)
        Eventually.until(
                "every slot free again, long before the 30 s lease",
                () -> inUse("fay") == 0 && status("/slow?user=fay&millis=0") == 200);
    }

    @Test
    void aFailedMonoReleasesItsSlot() throws Exception {
        for (int i = 0; i < 3; i++) {
            assertThat(get("/fail?user=ann").statusCode()).isEqualTo(500);
            Eventually.until("released", () -> inUse("ann") == 0);
        }
    }

    @Test
    void aFluxHoldsItsSlotUntilItsStreamEnds() throws Exception {
        CompletableFuture<HttpResponse<String>> stream =
                client.sendAsync(request("/ticks?user=ann&count=5"), HttpResponse.BodyHandlers.ofString());
        Eventually.until("the Flux holds its slot", () -> inUse("ann") == 1);
        assertThat(get("/ticks?user=ann&count=1").statusCode()).isEqualTo(429);
        assertThat(stream.get(10, TimeUnit.SECONDS).body()).contains("data:2");
        Eventually.until("released", () -> inUse("ann") == 0);
    }

    @Test
    void aClientThatDisconnectsMidStreamReleasesItsSlot() throws Exception {
        try (Socket socket = new Socket("127.0.0.1", this.port)) {
            OutputStream out = socket.getOutputStream();
            out.write(
                    ("GET /ticks?user=ann&count=1000 HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n")
                            .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            // the first event, not the first bytes: the response's headers may leave before the
            // subscription that takes the slot
            StringBuilder received = new StringBuilder();
            byte[] buffer = new byte[256];
            while (received.indexOf("data:") < 0) {
                int read = in.read(buffer);
                assertThat(read).as("the stream started").isPositive();
                received.append(new String(buffer, 0, read, StandardCharsets.US_ASCII));
            }
            assertThat(inUse("ann")).as("the stream holds its slot").isEqualTo(1);
        }
        Eventually.until("the disconnect cancelled the stream and released its slot", () -> inUse("ann") == 0);
    }

    @Test
    void aCallThatMayWaitRunsOnceTheSlotItWaitsForIsReleased() throws Exception {
        CompletableFuture<HttpResponse<String>> slow =
                client.sendAsync(request("/slow?user=bob&millis=800"), HttpResponse.BodyHandlers.ofString());
        Eventually.until("the Mono holds its slot", () -> inUse("bob") == 1);
        long started = System.nanoTime();
        HttpResponse<String> waited = get("/queued?user=bob&millis=0");
        assertThat(waited.statusCode()).as("it waited instead of a 429").isEqualTo(200);
        assertThat(slow.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started))
                .as("it ran after the slow call released the slot")
                .isGreaterThanOrEqualTo(300);
        Eventually.until("released", () -> inUse("bob") == 0);
    }

    @Test
    void aClientThatDisconnectsWhileWaitingForASlotTakesNone() throws Exception {
        CompletableFuture<HttpResponse<String>> slow =
                client.sendAsync(request("/slow?user=cy&millis=1500"), HttpResponse.BodyHandlers.ofString());
        Eventually.until("the Mono holds its slot", () -> inUse("cy") == 1);
        try (Socket socket = new Socket("127.0.0.1", this.port)) {
            // were it to get the slot, this call would hold it for a minute
            socket.getOutputStream()
                    .write(("GET /queued?user=cy&millis=60000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
                            .getBytes(StandardCharsets.US_ASCII));
            socket.getOutputStream().flush();
            Thread.sleep(300);
        }
        assertThat(slow.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        Eventually.until("the slow call released its slot", () -> inUse("cy") == 0);
        Thread.sleep(500);
        assertThat(inUse("cy"))
                .as("the waiter that left took no slot (it would hold it for a minute, or until its lease)")
                .isZero();
        assertThat(get("/slow?user=cy&millis=0").statusCode()).isEqualTo(200);
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(SlotEndpoints.class)
    static class SlotsApplication {

        @Bean
        ManualTimeSource manualTimeSource() {
            return new ManualTimeSource();
        }
    }

    @RestController
    static class SlotEndpoints {

        @GetMapping("/slow")
        @Throttled(policy = "slots", key = "#user")
        Mono<String> slow(@RequestParam String user, @RequestParam long millis) {
            return Mono.delay(Duration.ofMillis(millis)).thenReturn("done");
        }

        @GetMapping("/queued")
        @Throttled(policy = "slots", key = "#user", maxWait = "10s")
        Mono<String> queued(@RequestParam String user, @RequestParam long millis) {
            return Mono.delay(Duration.ofMillis(millis)).thenReturn("done");
        }

        @GetMapping("/fail")
        @Throttled(policy = "slots", key = "#user")
        Mono<String> fail(@RequestParam String user) {
            return Mono.error(new IllegalStateException("the report failed"));
        }

        @GetMapping("/tagged")
        @Throttled(policy = "slots", key = "#user")
        Mono<ResponseEntity<Flux<String>>> tagged(@RequestParam String user) {
            return Mono.just(ResponseEntity.ok().eTag("\"v1\"").body(Flux.just("a", "b")));
        }

        @GetMapping(path = "/ticks", produces = MediaType.TEXT_EVENT_STREAM_VALUE)
        @Throttled(policy = "slots", key = "#user")
        Flux<Long> ticks(@RequestParam String user, @RequestParam int count) {
            return Flux.interval(Duration.ofMillis(200)).take(count);
        }
    }
}
