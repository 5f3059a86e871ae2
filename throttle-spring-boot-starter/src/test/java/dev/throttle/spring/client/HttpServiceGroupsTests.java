package dev.throttle.spring.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.throttle.Throttler;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.service.annotation.GetExchange;
import org.springframework.web.service.registry.HttpServiceGroup;
import org.springframework.web.service.registry.ImportHttpServices;
import reactor.core.publisher.Mono;

/**
 * {@code @HttpExchange} clients of Spring Boot's HTTP service groups, one group on {@code WebClient}
 * and one on {@code RestClient}, their base URLs given by {@code spring.http.serviceclient.<group>},
 * against a real local HTTP server that counts calls: the client's policy holds both (the server
 * never sees more than it allows), and each call is charged once (the policy's remaining count goes
 * down by exactly one per call), not once per way the filter could have reached the group's builder.
 */
class HttpServiceGroupsTests {

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
                        "throttle.clients.quotes.base-url=" + this.server.url(),
                        "throttle.clients.quotes.policy=upstream",
                        "spring.http.serviceclient.reactive.base-url=" + this.server.url(),
                        "spring.http.serviceclient.blocking.base-url=" + this.server.url());
    }

    @AfterEach
    void stop() {
        this.server.close();
    }

    /** The client's key: the server's host and port. */
    private String key() {
        return this.server.url().substring("http://".length());
    }

    @Test
    void aWebClientGroupsClientIsChargedOncePerCallAndNeverSendsMoreThanThePolicyAllows() {
        this.contextRunner.run((context) -> {
            ReactiveQuotes quotes = context.getBean(ReactiveQuotes.class);
            Throttler throttler = context.getBean(Throttler.class);
            for (int i = 1; i <= 3; i++) {
                assertThat(quotes.quote().block(Duration.ofSeconds(5))).contains("200");
                assertThat(throttler.peek("upstream", key()).remaining())
                        .as("left after call %d", i)
                        .isEqualTo(3 - i);
            }
            for (int i = 0; i < 5; i++) {
                assertThatThrownBy(() -> quotes.quote().block(Duration.ofSeconds(5)))
                        .isInstanceOf(OutgoingCallThrottledException.class);
            }
            assertThat(this.server.calls()).as("what reached the server").isEqualTo(3);
        });
    }

    @Test
    void aRestClientGroupsClientIsChargedOncePerCallAndNeverSendsMoreThanThePolicyAllows() {
        this.contextRunner.run((context) -> {
            BlockingQuotes quotes = context.getBean(BlockingQuotes.class);
            Throttler throttler = context.getBean(Throttler.class);
            for (int i = 1; i <= 3; i++) {
                assertThat(quotes.quote()).contains("200");
                assertThat(throttler.peek("upstream", key()).remaining())
                        .as("left after call %d", i)
                        .isEqualTo(3 - i);
            }
            for (int i = 0; i < 5; i++) {
                assertThatThrownBy(quotes::quote).isInstanceOf(OutgoingCallThrottledException.class);
            }
            assertThat(this.server.calls()).as("what reached the server").isEqualTo(3);
        });
    }

    @Test
    void bothGroupsShareTheClientsPolicy() {
        this.contextRunner.run((context) -> {
            ReactiveQuotes reactive = context.getBean(ReactiveQuotes.class);
            BlockingQuotes blocking = context.getBean(BlockingQuotes.class);
            reactive.quote().block(Duration.ofSeconds(5));
            blocking.quote();
            reactive.quote().block(Duration.ofSeconds(5));
            assertThatThrownBy(blocking::quote).isInstanceOf(OutgoingCallThrottledException.class);
            assertThatThrownBy(() -> reactive.quote().block(Duration.ofSeconds(5)))
                    .isInstanceOf(OutgoingCallThrottledException.class);
            assertThat(this.server.calls()).isEqualTo(3);
        });
    }

    interface ReactiveQuotes {

        @GetExchange("/quote")
        Mono<String> quote();
    }

    interface BlockingQuotes {

        @GetExchange("/quote")
        String quote();
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @ImportHttpServices(
            group = "reactive",
            types = ReactiveQuotes.class,
            clientType = HttpServiceGroup.ClientType.WEB_CLIENT)
    @ImportHttpServices(group = "blocking", types = BlockingQuotes.class)
    static class Application {}
}
