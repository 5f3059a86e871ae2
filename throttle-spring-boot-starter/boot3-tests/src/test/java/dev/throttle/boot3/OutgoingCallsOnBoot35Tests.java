package dev.throttle.boot3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import dev.throttle.Throttler;
import dev.throttle.spring.client.OutgoingCallThrottledException;
import dev.throttle.spring.client.ThrottledClients;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.client.RestClient;
import org.springframework.web.client.RestTemplate;
import org.springframework.web.reactive.function.client.WebClient;

/**
 * Throttled outgoing calls on Spring Boot 3.5, whose RestClient and WebClient customizers live in
 * other packages than Boot 4's: the starter adds its interceptor to Boot 3.5's
 * {@code RestClient.Builder} beans and its filter to its {@code WebClient.Builder} beans instead
 * (once: each call is charged once), and a RestTemplate attaches it explicitly. Against a real local
 * HTTP server that counts the calls reaching it.
 */
class OutgoingCallsOnBoot35Tests {

    private HttpServer server;

    private final AtomicInteger calls = new AtomicInteger();

    private ApplicationContextRunner contextRunner;

    @BeforeEach
    void start() throws Exception {
        this.server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        this.server.createContext("/", (exchange) -> {
            this.calls.incrementAndGet();
            byte[] body = "{}".getBytes();
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        this.server.start();
        this.contextRunner = new ApplicationContextRunner()
                .withUserConfiguration(Application.class)
                .withPropertyValues(
                        "throttle.policies.upstream.algorithm=gcra",
                        "throttle.policies.upstream.limit=3",
                        "throttle.policies.upstream.period=60s",
                        "throttle.clients.quotes.base-url=" + url(),
                        "throttle.clients.quotes.policy=upstream");
    }

    @AfterEach
    void stop() {
        this.server.stop(0);
    }

    private String url() {
        return "http://127.0.0.1:" + this.server.getAddress().getPort();
    }

    @Test
    void aRestClientFromBoot35sBuilderNeverSendsMoreThanThePolicyAllows() {
        this.contextRunner.run((context) -> {
            RestClient client = context.getBean(RestClient.Builder.class).build();
            int refused = 0;
            for (int i = 0; i < 5; i++) {
                try {
                    client.get().uri(url() + "/quote").retrieve().body(String.class);
                } catch (OutgoingCallThrottledException ex) {
                    refused++;
                }
            }
            assertThat(refused).isEqualTo(2);
            assertThat(this.calls).hasValue(3);
        });
    }

    @Test
    void aWebClientFromBoot35sBuilderIsChargedOncePerCallAndNeverSendsMoreThanThePolicyAllows() {
        this.contextRunner.run((context) -> {
            WebClient client = context.getBean(WebClient.Builder.class).build();
            Throttler throttler = context.getBean(Throttler.class);
            String key = url().substring("http://".length());
            for (int i = 1; i <= 3; i++) {
                client.get()
                        .uri(url() + "/quote")
                        .retrieve()
                        .bodyToMono(String.class)
                        .block(Duration.ofSeconds(5));
                assertThat(throttler.peek("upstream", key).remaining())
                        .as("left after call %d", i)
                        .isEqualTo(3 - i);
            }
            assertThatThrownBy(() -> client.get()
                            .uri(url() + "/quote")
                            .retrieve()
                            .bodyToMono(String.class)
                            .block(Duration.ofSeconds(5)))
                    .isInstanceOf(OutgoingCallThrottledException.class);
            assertThat(this.calls).hasValue(3);
        });
    }

    @Test
    void aRestTemplateAttachesTheInterceptorExplicitly() {
        this.contextRunner.run((context) -> {
            RestTemplate template = new RestTemplate();
            template.getInterceptors()
                    .add(context.getBean(ThrottledClients.class).interceptor("quotes"));
            int refused = 0;
            for (int i = 0; i < 5; i++) {
                try {
                    template.getForObject(url() + "/quote", String.class);
                } catch (OutgoingCallThrottledException ex) {
                    refused++;
                }
            }
            assertThat(refused).isEqualTo(2);
            assertThat(this.calls).hasValue(3);
        });
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class Application {}
}
