package dev.throttle.spring.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.throttle.spring.ThrottleConfigurationException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.client.RestClient;

/**
 * Outgoing calls of a {@code RestClient} built from Spring Boot's builder, throttled by
 * {@code throttle.clients} on the memory store, against a real local HTTP server that counts what
 * reaches it: the server never sees more than the policy allows; a call waits for its turn or fails
 * without being sent; requests no client describes pass untouched; every mistake fails the start
 * naming its property.
 */
class OutgoingCallsTests {

    private CountingServer server;

    private ApplicationContextRunner contextRunner;

    @BeforeEach
    void start() throws Exception {
        this.server = new CountingServer();
        this.contextRunner = new ApplicationContextRunner()
                .withUserConfiguration(Application.class)
                .withPropertyValues(
                        "throttle.policies.upstream.algorithm=gcra",
                        "throttle.policies.upstream.limit=3",
                        "throttle.policies.upstream.period=60s",
                        "throttle.policies.quick.algorithm=gcra",
                        "throttle.policies.quick.limit=1",
                        "throttle.policies.quick.period=300ms",
                        "throttle.clients.quotes.base-url=" + this.server.url() + "/api",
                        "throttle.clients.quotes.policy=upstream");
    }

    @AfterEach
    void stop() {
        this.server.close();
    }

    private static String get(RestClient client, String url) {
        return client.get().uri(url).retrieve().body(String.class);
    }

    @Test
    void theServerNeverSeesMoreCallsThanThePolicyAllowsAndTheRestFailWithoutBeingSent() {
        this.contextRunner.run((context) -> {
            RestClient client = context.getBean(RestClient.Builder.class).build();
            int sent = 0;
            int refused = 0;
            for (int i = 0; i < 10; i++) {
                try {
                    assertThat(get(client, this.server.url() + "/api/quote")).contains("200");
                    sent++;
                } catch (OutgoingCallThrottledException ex) {
                    assertThat(ex.getClient()).isEqualTo("quotes");
                    assertThat(ex.isRemotePause()).isFalse();
                    assertThat(ex.getDecision().retryAfterSeconds()).isBetween(1L, 60L);
                    refused++;
                }
            }
            assertThat(sent).isEqualTo(3);
            assertThat(refused).isEqualTo(7);
            assertThat(this.server.calls()).as("what reached the server").isEqualTo(3);
        });
    }

    @Test
    void aCallOverTheLimitWaitsForItsTurnWithinTheClientsWaitThenIsSent() {
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.policy=quick", "throttle.clients.quotes.wait=2s")
                .run((context) -> {
                    RestClient client =
                            context.getBean(RestClient.Builder.class).build();
                    long start = System.nanoTime();
                    for (int i = 0; i < 3; i++) {
                        get(client, this.server.url() + "/api/quote");
                    }
                    assertThat(System.nanoTime() - start)
                            .as("three calls, each sent 300 ms after the one before")
                            .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(599));
                    assertThat(this.server.calls()).isEqualTo(3);
                });
    }

    @Test
    void requestsThatNoClientDescribesPassUntouched() {
        this.contextRunner.run((context) -> {
            RestClient client = context.getBean(RestClient.Builder.class).build();
            for (int i = 0; i < 10; i++) {
                get(client, this.server.url() + "/other");
                get(client, this.server.url() + "/apis");
            }
            assertThat(this.server.calls()).isEqualTo(20);
        });
    }

    @Test
    void hostsDescribeAClientWhateverThePath() {
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.base-url=", "throttle.clients.quotes.hosts=127.0.0.1")
                .run((context) -> {
                    RestClient client =
                            context.getBean(RestClient.Builder.class).build();
                    for (int i = 0; i < 5; i++) {
                        try {
                            get(client, this.server.url() + "/any/path/" + i);
                        } catch (OutgoingCallThrottledException expected) {
                            // beyond the policy
                        }
                    }
                    assertThat(this.server.calls()).isEqualTo(3);
                });
    }

    @Test
    void aClientAttachedExplicitlyThrottlesEveryRequestOfThatHttpClient() {
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.base-url=https://elsewhere.example")
                .run((context) -> {
                    ThrottledClients clients = context.getBean(ThrottledClients.class);
                    RestClient client = RestClient.builder()
                            .requestInterceptor(clients.interceptor("quotes"))
                            .build();
                    for (int i = 0; i < 5; i++) {
                        try {
                            get(client, this.server.url() + "/anything");
                        } catch (OutgoingCallThrottledException expected) {
                            // beyond the policy
                        }
                    }
                    assertThat(this.server.calls()).isEqualTo(3);
                    assertThatThrownBy(() -> clients.interceptor("nope")).hasMessageContaining("No client 'nope'");
                });
    }

    @Test
    void aClientNamingNoConfiguredPolicyFailsTheStartNamingTheProperty() {
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.policy=nope")
                .run((context) -> assertThat(context)
                        .getFailure()
                        .rootCause()
                        .isInstanceOf(ThrottleConfigurationException.class)
                        .hasMessageContaining("throttle.clients.quotes.policy is 'nope'"));
    }

    @Test
    void aClientWithoutBaseUrlOrHostsFailsTheStart() {
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.base-url=")
                .run((context) -> assertThat(context)
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining("throttle.clients.quotes.neither base-url nor hosts"));
    }

    @Test
    void aBaseUrlThatIsNotAbsoluteOrAKeyThatDoesNotParseFailsTheStart() {
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.base-url=/relative")
                .run((context) -> assertThat(context)
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining("throttle.clients.quotes.base-url is '/relative'"));
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.key=#uri.(")
                .run((context) -> assertThat(context)
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining("throttle.clients.quotes.key is '#uri.('"));
    }

    @Test
    void aKeyNamingAVariableTheRequestDoesNotHaveOrAWithoutItsHashFailsTheStart() {
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.key=#tenant")
                .run((context) -> assertThat(context)
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining("throttle.clients.quotes.key is '#tenant', which names #tenant, which an "
                                + "outgoing request does not have"));
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.key=headers.getFirst('X-Tenant')")
                .run((context) -> assertThat(context)
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining("throttle.clients.quotes.key is 'headers.getFirst('X-Tenant')', which "
                                + "reads 'headers' from the root object"));
    }

    @Test
    void aKeyExpressionSplitsTheCallsOfOneHost() {
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.key=#uri.path")
                .run((context) -> {
                    RestClient client =
                            context.getBean(RestClient.Builder.class).build();
                    for (int i = 0; i < 3; i++) {
                        get(client, this.server.url() + "/api/a");
                        get(client, this.server.url() + "/api/b");
                    }
                    assertThatThrownBy(() -> get(client, this.server.url() + "/api/a"))
                            .isInstanceOf(OutgoingCallThrottledException.class);
                    assertThat(this.server.calls()).as("three per path").isEqualTo(6);
                });
    }

    @Test
    void aKeyExpressionMayCallAMethodOfTheRequestsHeaders() {
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.key=#headers.getFirst('X-Tenant')")
                .run((context) -> {
                    RestClient client =
                            context.getBean(RestClient.Builder.class).build();
                    for (String tenant : new String[] {"a", "b"}) {
                        for (int i = 0; i < 3; i++) {
                            client.get()
                                    .uri(this.server.url() + "/api/quote")
                                    .header("X-Tenant", tenant)
                                    .retrieve()
                                    .body(String.class);
                        }
                    }
                    assertThatThrownBy(() -> client.get()
                                    .uri(this.server.url() + "/api/quote")
                                    .header("X-Tenant", "a")
                                    .retrieve()
                                    .body(String.class))
                            .isInstanceOf(OutgoingCallThrottledException.class);
                    assertThat(this.server.calls()).as("three per tenant").isEqualTo(6);
                });
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class Application {}
}
