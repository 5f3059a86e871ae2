package dev.throttle.spring.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.throttle.GcraPolicy;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.admission.Admissions;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.client.RestClient;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Mono;

/**
 * Calls of a throttled client while other calls are on their way, against a real local HTTP
 * server: a pause the remote asks for holds the calls already waiting for their turn, a concurrency
 * slot is held until the response's body is read, a cancelled exchange frees its slot, and every
 * spelling of one remote is one client and one key.
 */
class OutgoingCallsInFlightTests {

    private CountingServer server;

    private ApplicationContextRunner contextRunner;

    @BeforeEach
    void start() throws Exception {
        this.server = new CountingServer();
        this.contextRunner = new ApplicationContextRunner()
                .withUserConfiguration(Application.class)
                .withPropertyValues(
                        "throttle.policies.paced.algorithm=gcra",
                        "throttle.policies.paced.limit=1",
                        "throttle.policies.paced.period=1s",
                        "throttle.policies.slots.algorithm=concurrency",
                        "throttle.policies.slots.limit=1",
                        "throttle.policies.slots.lease=30s",
                        "throttle.clients.quotes.base-url=" + this.server.url(),
                        "throttle.clients.quotes.policy=paced",
                        "throttle.clients.quotes.wait=5s",
                        "throttle.clients.quotes.honor-remote-limits=true");
    }

    @AfterEach
    void stop() {
        this.server.close();
    }

    @Test
    void aRestClientCallThatWaitsForItsTurnIsNotSentDuringAPauseTheRemoteAskedForMeanwhile() {
        this.contextRunner.run((context) -> assertWaiterHeldByPause(restClientStatus(context)));
    }

    @Test
    void aWebClientCallThatWaitsForItsTurnIsNotSentDuringAPauseTheRemoteAskedForMeanwhile() {
        this.contextRunner.run((context) -> assertWaiterHeldByPause(webClientStatus(context)));
    }

    @Test
    void aRestClientCallThatWaitsForAConcurrencySlotIsNotSentDuringAPauseTheRemoteAskedForMeanwhile() {
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.policy=slots")
                .run((context) -> assertWaiterHeldByPause(restClientStatus(context)));
    }

    @Test
    void aWebClientCallThatWaitsForAConcurrencySlotIsNotSentDuringAPauseTheRemoteAskedForMeanwhile() {
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.policy=slots")
                .run((context) -> assertWaiterHeldByPause(webClientStatus(context)));
    }

    /** A RestClient call of a path of the server: its status. */
    private Function<String, Integer> restClientStatus(AssertableApplicationContext context) {
        RestClient client = context.getBean(RestClient.Builder.class).build();
        return (path) -> client.get()
                .uri(this.server.url() + path)
                .exchange((request, response) -> response.getStatusCode().value());
    }

    /** A WebClient call of a path of the server: its status, the body released. */
    private Function<String, Integer> webClientStatus(AssertableApplicationContext context) {
        WebClient client = context.getBean(WebClient.Builder.class).build();
        return (path) -> client.get()
                .uri(this.server.url() + path)
                .exchangeToMono((response) ->
                        response.releaseBody().thenReturn(response.statusCode().value()))
                .block(Duration.ofSeconds(10));
    }

    @Test
    void aBodyTakenAsAStreamEndsTheCallWhenClosed() throws Exception {
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.policy=slots", "throttle.clients.quotes.wait=0s")
                .run((context) -> {
                    RestClient client =
                            context.getBean(RestClient.Builder.class).build();
                    for (int i = 0; i < 3; i++) {
                        // the response left open for the caller, who reads and closes the stream alone
                        try (java.io.InputStream body = client.get()
                                .uri(this.server.url() + "/stream")
                                .exchange((request, response) -> response.getBody(), false)) {
                            assertThat(new String(body.readAllBytes())).contains("200");
                        }
                    }
                    assertThat(this.server.calls())
                            .as("each call's slot freed when its stream was closed")
                            .isEqualTo(3);
                });
    }

    /**
     * The first call is answered 429 with Retry-After 10 after 300 ms; the second books its turn (a
     * second later) while the first is on its way: at its turn the remote's pause holds it, and it
     * outlasts the rest of its wait, so it fails unsent.
     */
    private void assertWaiterHeldByPause(Function<String, Integer> call) throws Exception {
        this.server.thenAnswerAfter(300, 429, Map.of("Retry-After", "10"));
        CompletableFuture<Integer> first = CompletableFuture.supplyAsync(() -> call.apply("/first"));
        Thread.sleep(100);
        CompletableFuture<Integer> second = CompletableFuture.supplyAsync(() -> call.apply("/second"));
        assertThat(first.get(10, TimeUnit.SECONDS)).isEqualTo(429);
        assertThatThrownBy(() -> second.get(10, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOfSatisfying(
                        OutgoingCallThrottledException.class,
                        (ex) -> assertThat(ex.isRemotePause())
                                .as("held by the remote's pause")
                                .isTrue());
        assertThat(this.server.calls())
                .as("the call that waited for its turn never reached the paused remote")
                .isEqualTo(1);
    }

    @Test
    void aRestClientCallHoldsItsConcurrencySlotUntilItsBodyIsReadAndClosed() {
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.policy=slots", "throttle.clients.quotes.wait=0s")
                .run((context) -> {
                    RestClient client =
                            context.getBean(RestClient.Builder.class).build();
                    String during = client.get()
                            .uri(this.server.url() + "/report")
                            .exchange((request, response) -> {
                                try {
                                    client.get()
                                            .uri(this.server.url() + "/other")
                                            .retrieve()
                                            .toBodilessEntity();
                                    return "sent";
                                } catch (OutgoingCallThrottledException ex) {
                                    return "refused";
                                }
                            });
                    assertThat(during)
                            .as("a second call while the first's body is unread")
                            .isEqualTo("refused");
                    assertThat(client.get()
                                    .uri(this.server.url() + "/next")
                                    .retrieve()
                                    .body(String.class))
                            .as("the slot is free once the first response is closed")
                            .contains("200");
                });
    }

    @Test
    void aWebClientCallHoldsItsConcurrencySlotUntilItsBodyIsConsumed() {
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.policy=slots", "throttle.clients.quotes.wait=0s")
                .run((context) -> {
                    WebClient client = context.getBean(WebClient.Builder.class).build();
                    Mono<String> other = client.get()
                            .uri(this.server.url() + "/other")
                            .retrieve()
                            .toBodilessEntity()
                            .map((entity) -> "sent")
                            .onErrorResume(OutgoingCallThrottledException.class, (ex) -> Mono.just("refused"));
                    String during = client.get()
                            .uri(this.server.url() + "/report")
                            .exchangeToMono((response) -> other.flatMap((outcome) ->
                                    response.bodyToMono(String.class).thenReturn(outcome)))
                            .block(Duration.ofSeconds(10));
                    assertThat(during)
                            .as("a second call while the first's body is unread")
                            .isEqualTo("refused");
                    assertThat(client.get()
                                    .uri(this.server.url() + "/next")
                                    .retrieve()
                                    .bodyToMono(String.class)
                                    .block(Duration.ofSeconds(10)))
                            .as("the slot is free once the first body is consumed")
                            .contains("200");
                });
    }

    @Test
    void aWebClientCallCancelledWhileExchangedFreesItsConcurrencySlot() {
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.policy=slots", "throttle.clients.quotes.wait=0s")
                .run((context) -> {
                    WebClient client = context.getBean(WebClient.Builder.class).build();
                    this.server.thenAnswerAfter(3000, 200, Map.of());
                    assertThatThrownBy(() -> client.get()
                                    .uri(this.server.url() + "/slow")
                                    .retrieve()
                                    .bodyToMono(String.class)
                                    .timeout(Duration.ofMillis(200))
                                    .block(Duration.ofSeconds(10)))
                            .hasCauseInstanceOf(java.util.concurrent.TimeoutException.class);
                    assertThat(client.get()
                                    .uri(this.server.url() + "/next")
                                    .retrieve()
                                    .bodyToMono(String.class)
                                    .block(Duration.ofSeconds(10)))
                            .as("the slot was freed by the cancel, not at the end of its lease")
                            .contains("200");
                });
    }

    @Test
    void everySpellingOfOneRemoteIsOneClientAndOneKey() {
        OutgoingClient client = client("http://api.example.com", "partner.example.com");
        for (String url : new String[] {
            "http://api.example.com/x",
            "http://API.Example.com./x",
            "http://api.example.com:80/x",
            "http://api.example.com.:80/x"
        }) {
            URI uri = URI.create(url);
            assertThat(client.matches(uri)).as(url).isTrue();
            assertThat(client.keyOf(uri, "GET", Map.of())).as(url).isEqualTo("api.example.com");
        }
        OutgoingClient underPath = client("http://api.example.com/api");
        for (String url : new String[] {
            "http://api.example.com/api/x",
            "http://api.example.com/./api/x",
            "http://api.example.com/x/../api/x",
            "http://api.example.com/%61pi/x"
        }) {
            assertThat(underPath.matches(URI.create(url)))
                    .as("%s is /api/x to the server", url)
                    .isTrue();
        }
        assertThat(underPath.matches(URI.create("http://api.example.com/apis"))).isFalse();
        assertThat(client.matches(URI.create("https://api.example.com/x"))).isFalse();
        assertThat(client.matches(URI.create("http://api.example.com:8080/x"))).isFalse();
        assertThat(client.keyOf(URI.create("https://api.example.com:443/x"), "GET", Map.of()))
                .isEqualTo("api.example.com");
        assertThat(client.keyOf(URI.create("http://api.example.com:8080/x"), "GET", Map.of()))
                .isEqualTo("api.example.com:8080");
        assertThat(client.matches(URI.create("https://Partner.Example.com.:8443/y")))
                .as("a host the client names, any port")
                .isTrue();
    }

    /** A client of the memory store under this base URL and these hosts. */
    private static OutgoingClient client(String baseUrl, String... hosts) {
        Throttler throttler =
                new Throttler(new MemoryThrottleStore(), List.of(new GcraPolicy("paced", 1, Duration.ofSeconds(1))));
        return new OutgoingClient(
                "quotes",
                URI.create(baseUrl),
                Set.of(hosts),
                Admissions.of(throttler).charge("paced"),
                null,
                false,
                new MemoryRemotePauses(TimeSource.system()),
                new OutgoingCallListener() {},
                TimeSource.system());
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class Application {}
}
