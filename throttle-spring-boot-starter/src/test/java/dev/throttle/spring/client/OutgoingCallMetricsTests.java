package dev.throttle.spring.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.client.RestClient;

/**
 * The meters of outgoing calls: {@code throttle.client.calls} by client, policy and outcome (sent,
 * refused by the policy, kept back by a remote's pause), {@code throttle.client.pauses} by client, and
 * a wait for a remote's pause in the {@code throttle.wait} timer of the client's policy.
 */
class OutgoingCallMetricsTests {

    private CountingServer server;

    private ApplicationContextRunner contextRunner;

    @BeforeEach
    void start() throws Exception {
        this.server = new CountingServer();
        this.contextRunner = new ApplicationContextRunner()
                .withUserConfiguration(Application.class)
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .withPropertyValues(
                        "throttle.policies.upstream.algorithm=gcra",
                        "throttle.policies.upstream.limit=3",
                        "throttle.policies.upstream.period=60s",
                        "throttle.clients.quotes.base-url=" + this.server.url(),
                        "throttle.clients.quotes.policy=upstream",
                        "throttle.clients.quotes.honor-remote-limits=true");
    }

    @AfterEach
    void stop() {
        this.server.close();
    }

    private int call(RestClient client) {
        try {
            return client.get()
                    .uri(this.server.url() + "/quote")
                    .exchange((request, response) -> response.getStatusCode().value());
        } catch (OutgoingCallThrottledException ex) {
            return -1;
        }
    }

    private static double calls(MeterRegistry registry, String outcome) {
        return registry.get("throttle.client.calls")
                .tags("client", "quotes", "policy", "upstream", "outcome", outcome)
                .counter()
                .count();
    }

    @Test
    void callsAreCountedByClientPolicyAndOutcome() {
        this.contextRunner.run((context) -> {
            RestClient client = context.getBean(RestClient.Builder.class).build();
            for (int i = 0; i < 4; i++) {
                call(client);
            }
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            assertThat(calls(registry, "sent")).isEqualTo(3);
            assertThat(calls(registry, "refused")).isEqualTo(1);
        });
    }

    @Test
    void remotePausesAndTheCallsTheyKeepBackAreCounted() {
        this.contextRunner.run((context) -> {
            RestClient client = context.getBean(RestClient.Builder.class).build();
            this.server.thenAnswer(429, Map.of("Retry-After", "30"));
            assertThat(call(client)).isEqualTo(429);
            assertThat(call(client)).isEqualTo(-1);
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            assertThat(registry.get("throttle.client.pauses")
                            .tags("client", "quotes")
                            .counter()
                            .count())
                    .isEqualTo(1);
            assertThat(calls(registry, "paused")).isEqualTo(1);
            assertThat(calls(registry, "sent")).isEqualTo(1);
        });
    }

    @Test
    void aWaitForARemotesPauseIsTimedInThePolicysWaitTimer() {
        this.contextRunner.withPropertyValues("throttle.clients.quotes.wait=3s").run((context) -> {
            RestClient client = context.getBean(RestClient.Builder.class).build();
            this.server.thenAnswer(429, Map.of("Retry-After", "1"));
            call(client);
            assertThat(call(client)).isEqualTo(200);
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            assertThat(registry.get("throttle.wait")
                            .tags("policy", "upstream")
                            .timer()
                            .count())
                    .isEqualTo(1);
        });
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class Application {}
}
