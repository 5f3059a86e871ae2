package dev.throttle.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.testing.Eventually;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;
import org.springframework.web.servlet.mvc.method.annotation.StreamingResponseBody;

/**
 * A concurrency limit through a real Spring MVC port: the slot is held while the handler runs and
 * released exactly once however the call ends (a return, an exception, the end of a
 * {@code StreamingResponseBody} or an {@code SseEmitter}), by the annotation and by a URL rule; a
 * refusal names the slots and gives a one-second hint.
 */
@SpringBootTest(
        classes = ConcurrencyHttpTests.SlotsApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.policies.slots.algorithm=concurrency",
            "throttle.policies.slots.limit=1",
            "throttle.policies.slots.lease=30s",
            "throttle.policies.ruled.algorithm=concurrency",
            "throttle.policies.ruled.limit=1",
            "throttle.policies.ruled.lease=30s",
            "throttle.http.rules[0].paths=/ruled/**",
            "throttle.http.rules[0].policy=ruled",
            "throttle.http.rules[0].key=#params['user']",
            "throttle.policies.queued.algorithm=concurrency",
            "throttle.policies.queued.limit=1",
            "throttle.policies.queued.lease=30s",
            "throttle.policies.queued.wait=10s",
            "throttle.http.rules[1].paths=/queued/**",
            "throttle.http.rules[1].policy=queued",
            "throttle.http.rules[1].key=#params['user']"
        })
class ConcurrencyHttpTests {

    /** Holds the handlers that wait until a test lets them end. */
    static volatile CountDownLatch gate = new CountDownLatch(0);

    @LocalServerPort
    int port;

    @Autowired
    MemoryThrottleStore store;

    @Autowired
    Throttler throttler;

    @BeforeEach
    void clearState() {
        this.store.clear();
        gate = new CountDownLatch(1);
    }

    @AfterEach
    void openGate() {
        gate.countDown();
    }

    private HttpResponse<String> get(String path) throws Exception {
        return ThrottleHttpTests.client.send(request(path), HttpResponse.BodyHandlers.ofString());
    }

    private CompletableFuture<HttpResponse<String>> getLater(String path) {
        return ThrottleHttpTests.client.sendAsync(request(path), HttpResponse.BodyHandlers.ofString());
    }

    private HttpRequest request(String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + path))
                .build();
    }

    private int inUse(String policy, String user) {
        return 1 - this.throttler.peek(policy, user).remaining();
    }

    private void assertReleased(String policy, String user) {
        Eventually.until(policy + " slot of " + user + " released", () -> inUse(policy, user) == 0);
    }

    @Test
    void aSecondCallWhileTheFirstRunsIsRefusedWithSlotsAndAOneSecondHint() throws Exception {
        CompletableFuture<HttpResponse<String>> first = getLater("/held?user=ann");
        Eventually.until("the first call holds its slot", () -> inUse("slots", "ann") == 1);
        HttpResponse<String> refused = get("/plain?user=ann");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(refused.headers().firstValue("RateLimit-Policy")).hasValue("\"slots\";q=1");
        assertThat(refused.headers().firstValue("RateLimit")).hasValue("\"slots\";r=0;t=1");
        assertThat(get("/plain?user=bob").statusCode()).as("another key").isEqualTo(200);
        gate.countDown();
        assertThat(first.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertReleased("slots", "ann");
        assertThat(get("/plain?user=ann").statusCode()).isEqualTo(200);
    }

    @Test
    void aCallThatMayWaitRunsWhenTheSlotItWaitsForIsReleased() throws Exception {
        CompletableFuture<HttpResponse<String>> first = getLater("/held?user=cy");
        Eventually.until("the first call holds its slot", () -> inUse("slots", "cy") == 1);
        CompletableFuture<HttpResponse<String>> waiting = getLater("/waits?user=cy");
        Thread.sleep(300);
        assertThat(waiting).as("it waits rather than a 429").isNotDone();
        gate.countDown();
        assertThat(first.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(waiting.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertReleased("slots", "cy");
    }

    @Test
    void aUrlRuleWhosePolicyWaitsLetsTheSecondCallRunAfterTheFirst() throws Exception {
        CompletableFuture<HttpResponse<String>> first = getLater("/queued/held?user=dee");
        Eventually.until("the first call holds its slot", () -> inUse("queued", "dee") == 1);
        CompletableFuture<HttpResponse<String>> waiting = getLater("/queued/plain?user=dee");
        Thread.sleep(300);
        assertThat(waiting).as("it waits rather than a 429").isNotDone();
        gate.countDown();
        assertThat(first.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(waiting.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertReleased("queued", "dee");
    }

    @Test
    void aPlainReturnReleasesTheSlot() throws Exception {
        gate.countDown();
        for (int i = 0; i < 3; i++) {
            HttpResponse<String> response = get("/plain?user=ann");
            assertThat(response.statusCode()).isEqualTo(200);
            assertThat(response.headers().firstValue("RateLimit")).hasValue("\"slots\";r=0;t=1");
            assertReleased("slots", "ann");
        }
    }

    @Test
    void anExceptionReleasesTheSlot() throws Exception {
        for (int i = 0; i < 3; i++) {
            assertThat(get("/fail?user=ann").statusCode()).isEqualTo(500);
            assertReleased("slots", "ann");
        }
    }

    @Test
    void aStreamingResponseBodyHoldsItsSlotUntilTheStreamEnds() throws Exception {
        CompletableFuture<HttpResponse<String>> streaming = getLater("/stream?user=ann");
        Eventually.until("the stream holds its slot", () -> inUse("slots", "ann") == 1);
        assertThat(get("/plain?user=ann").statusCode()).isEqualTo(429);
        gate.countDown();
        assertThat(streaming.get(10, TimeUnit.SECONDS).body()).isEqualTo("streamed");
        assertReleased("slots", "ann");
        assertThat(get("/plain?user=ann").statusCode()).isEqualTo(200);
    }

    @Test
    void anSseEmitterHoldsItsSlotUntilItCompletes() throws Exception {
        CompletableFuture<HttpResponse<String>> events = getLater("/events?user=ann");
        Eventually.until("the emitter holds its slot", () -> inUse("slots", "ann") == 1);
        assertThat(get("/plain?user=ann").statusCode()).isEqualTo(429);
        gate.countDown();
        assertThat(events.get(10, TimeUnit.SECONDS).body()).contains("data:one").contains("data:two");
        assertReleased("slots", "ann");
        assertThat(get("/plain?user=ann").statusCode()).isEqualTo(200);
    }

    @Test
    void aUrlRuleHoldsTheSlotUntilTheResponseCompletes() throws Exception {
        CompletableFuture<HttpResponse<String>> first = getLater("/ruled/held?user=ann");
        Eventually.until("the rule's call holds its slot", () -> inUse("ruled", "ann") == 1);
        HttpResponse<String> refused = get("/ruled/plain?user=ann");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("RateLimit-Policy")).hasValue("\"ruled\";q=1");
        gate.countDown();
        assertThat(first.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertReleased("ruled", "ann");
        assertThat(get("/ruled/fail?user=ann").statusCode()).isEqualTo(500);
        assertReleased("ruled", "ann");
        assertThat(get("/ruled/stream?user=ann").body()).isEqualTo("streamed");
        assertReleased("ruled", "ann");
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

        private static void awaitGate() {
            try {
                gate.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        }

        @GetMapping("/plain")
        @Throttled(policy = "slots", key = "#user")
        String plain(@RequestParam String user) {
            return "ok";
        }

        @GetMapping("/held")
        @Throttled(policy = "slots", key = "#user")
        String held(@RequestParam String user) {
            awaitGate();
            return "ok";
        }

        @GetMapping("/waits")
        @Throttled(policy = "slots", key = "#user", maxWait = "10s")
        String waits(@RequestParam String user) {
            return "ok";
        }

        @GetMapping("/queued/plain")
        String queuedPlain(@RequestParam String user) {
            return "ok";
        }

        @GetMapping("/queued/held")
        String queuedHeld(@RequestParam String user) {
            awaitGate();
            return "ok";
        }

        @GetMapping("/fail")
        @Throttled(policy = "slots", key = "#user")
        String fail(@RequestParam String user) {
            throw new IllegalStateException("the report failed");
        }

        @GetMapping("/stream")
        @Throttled(policy = "slots", key = "#user")
        StreamingResponseBody stream(@RequestParam String user) {
            return (out) -> {
                awaitGate();
                out.write("streamed".getBytes(StandardCharsets.UTF_8));
            };
        }

        @GetMapping("/events")
        @Throttled(policy = "slots", key = "#user")
        SseEmitter events(@RequestParam String user) {
            SseEmitter emitter = new SseEmitter(10_000L);
            new Thread(() -> {
                        try {
                            emitter.send("one");
                            awaitGate();
                            emitter.send("two");
                            emitter.complete();
                        } catch (IOException ex) {
                            emitter.completeWithError(ex);
                        }
                    })
                    .start();
            return emitter;
        }

        @GetMapping("/ruled/plain")
        String ruledPlain(@RequestParam String user) {
            return "ok";
        }

        @GetMapping("/ruled/held")
        String ruledHeld(@RequestParam String user) {
            awaitGate();
            return "ok";
        }

        @GetMapping("/ruled/fail")
        String ruledFail(@RequestParam String user) {
            throw new IllegalStateException("the report failed");
        }

        @GetMapping("/ruled/stream")
        StreamingResponseBody ruledStream(@RequestParam String user) {
            return (out) -> out.write("streamed".getBytes(StandardCharsets.UTF_8));
        }
    }
}
