package dev.throttle.spring.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.throttle.ManualTimeSource;
import dev.throttle.TimeSource;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.client.RestClient;

/**
 * {@code honor-remote-limits} on the memory store, against a real local HTTP server: a 429 with
 * {@code Retry-After} pauses the key, and until the pause ends (the application's clock, a manual one
 * here) no call reaches the server: each fails at once, or waits for the end within the client's
 * wait. The response that carried the 429 reaches the caller as it was. A header not to be trusted
 * pauses no one, or at most a day.
 */
class HonorRemoteLimitsTests {

    private final ManualTimeSource clock = new ManualTimeSource();

    private CountingServer server;

    private ApplicationContextRunner contextRunner;

    @BeforeEach
    void start() throws Exception {
        this.server = new CountingServer();
        this.contextRunner = new ApplicationContextRunner()
                .withUserConfiguration(Application.class)
                .withBean(TimeSource.class, () -> this.clock)
                .withPropertyValues(
                        "throttle.policies.upstream.algorithm=gcra",
                        "throttle.policies.upstream.limit=100",
                        "throttle.policies.upstream.period=1s",
                        "throttle.clients.quotes.base-url=" + this.server.url(),
                        "throttle.clients.quotes.policy=upstream",
                        "throttle.clients.quotes.honor-remote-limits=true");
    }

    @AfterEach
    void stop() {
        this.server.close();
    }

    /** The call's status and Retry-After, whatever the status: what the caller was handed. */
    private String call(RestClient client) {
        return client.get()
                .uri(this.server.url() + "/quote")
                .exchange((request, response) -> response.getStatusCode().value() + " "
                        + response.getHeaders().getFirst("Retry-After") + " "
                        + new String(response.getBody().readAllBytes()));
    }

    @Test
    void after429WithRetryAfterNoCallReachesTheServerUntilThePauseEnds() {
        this.contextRunner.run((context) -> {
            RestClient client = context.getBean(RestClient.Builder.class).build();
            this.server.thenAnswer(429, Map.of("Retry-After", "5"));
            assertThat(call(client)).as("the 429, as it came").isEqualTo("429 5 {\"status\":429}");
            for (int i = 0; i < 5; i++) {
                assertThatThrownBy(() -> call(client))
                        .isInstanceOfSatisfying(OutgoingCallThrottledException.class, (ex) -> {
                            assertThat(ex.isRemotePause()).isTrue();
                            assertThat(ex.getDecision().retryAfterSeconds()).isEqualTo(5);
                        });
            }
            this.clock.advance(Duration.ofSeconds(4));
            assertThatThrownBy(() -> call(client)).isInstanceOf(OutgoingCallThrottledException.class);
            assertThat(this.server.calls())
                    .as("nothing reached the server during the pause")
                    .isEqualTo(1);
            this.clock.advance(Duration.ofMillis(1001));
            assertThat(call(client)).startsWith("200");
            assertThat(this.server.calls()).isEqualTo(2);
        });
    }

    @Test
    void aCallWhoseWaitOutlastsThePauseWaitsForItsEndThenIsSent() {
        this.contextRunner.withPropertyValues("throttle.clients.quotes.wait=3s").run((context) -> {
            RestClient client = context.getBean(RestClient.Builder.class).build();
            this.server.thenAnswer(429, Map.of("Retry-After", "1"));
            call(client);
            long start = System.nanoTime();
            assertThat(call(client)).startsWith("200");
            assertThat(System.nanoTime() - start)
                    .as("waited out the pause")
                    .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(990));
            assertThat(this.server.calls()).isEqualTo(2);
        });
    }

    @Test
    void aRemoteThatSaysNothingIsLeftPausesTheKeyBeforeAnyRefusal() {
        this.contextRunner.run((context) -> {
            RestClient client = context.getBean(RestClient.Builder.class).build();
            this.server.thenAnswer(200, Map.of("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "3"));
            assertThat(call(client)).startsWith("200");
            assertThatThrownBy(() -> call(client)).isInstanceOf(OutgoingCallThrottledException.class);
            this.clock.advance(Duration.ofSeconds(3));
            this.server.thenAnswer(200, Map.of("RateLimit", "\"default\";r=0;t=2"));
            assertThat(call(client)).startsWith("200");
            assertThatThrownBy(() -> call(client)).isInstanceOf(OutgoingCallThrottledException.class);
            assertThat(this.server.calls()).isEqualTo(2);
        });
    }

    @Test
    void withoutHonorRemoteLimitsA429PausesNothing() {
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.honor-remote-limits=false")
                .run((context) -> {
                    RestClient client =
                            context.getBean(RestClient.Builder.class).build();
                    this.server.thenAnswer(429, Map.of("Retry-After", "5"));
                    assertThat(call(client)).startsWith("429");
                    assertThat(call(client)).startsWith("200");
                    assertThat(this.server.calls()).isEqualTo(2);
                });
    }

    @Test
    void aMalformedRetryAfterIsIgnoredAndAnAbsurdOneIsCappedToADay() {
        this.contextRunner.run((context) -> {
            RestClient client = context.getBean(RestClient.Builder.class).build();
            this.server.thenAnswer(429, Map.of("Retry-After", "whenever"));
            assertThat(call(client)).startsWith("429");
            this.server.thenAnswer(429, Map.of("Retry-After", "-30"));
            assertThat(call(client)).as("not paused by the malformed one").startsWith("429");
            assertThat(call(client)).as("nor by the negative one").startsWith("200");
            this.server.thenAnswer(429, Map.of("Retry-After", "99999999"));
            call(client);
            assertThatThrownBy(() -> call(client))
                    .isInstanceOfSatisfying(
                            OutgoingCallThrottledException.class,
                            (ex) -> assertThat(ex.getDecision().retryAfterSeconds())
                                    .isEqualTo(TimeUnit.DAYS.toSeconds(1)));
            this.clock.advance(Duration.ofDays(1));
            assertThat(call(client)).as("a day later").startsWith("200");
            assertThat(this.server.calls()).isEqualTo(5);
        });
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class Application {}
}
