package dev.throttle.spring.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import dev.throttle.testing.Eventually;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.restclient.RestTemplateBuilder;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.webclient.WebClientCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Scope;
import org.springframework.web.client.RestTemplate;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The same client on a {@code RestTemplate} built from Spring Boot's builder and on a
 * {@code WebClient} built from Spring Boot's {@code WebClient.Builder} (or from one the application
 * declares itself), against a real local HTTP server that counts calls: the server never sees more
 * than the policy allows, and each call is charged once; a WebClient call waits for its turn on a
 * timer, holding no thread, and one cancelled while it waits gives its turn back.
 */
class RestTemplateAndWebClientTests {

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
                        "throttle.policies.slow.algorithm=gcra",
                        "throttle.policies.slow.limit=1",
                        "throttle.policies.slow.period=10s",
                        "throttle.clients.quotes.base-url=" + this.server.url(),
                        "throttle.clients.quotes.policy=upstream");
    }

    @AfterEach
    void stop() {
        this.server.close();
    }

    @Test
    void aRestTemplateFromBootsBuilderNeverSendsMoreThanThePolicyAllows() {
        this.contextRunner.run((context) -> {
            RestTemplate template = context.getBean(RestTemplateBuilder.class).build();
            int refused = 0;
            for (int i = 0; i < 8; i++) {
                try {
                    template.getForObject(this.server.url() + "/quote", String.class);
                } catch (OutgoingCallThrottledException ex) {
                    refused++;
                }
            }
            assertThat(refused).isEqualTo(5);
            assertThat(this.server.calls()).isEqualTo(3);
        });
    }

    @Test
    void aWebClientFromBootsBuilderNeverSendsMoreThanThePolicyAllows() {
        this.contextRunner.run((context) -> {
            WebClient client = context.getBean(WebClient.Builder.class).build();
            AtomicInteger refused = new AtomicInteger();
            List<String> bodies = Flux.range(0, 8)
                    .concatMap((i) -> client.get()
                            .uri(this.server.url() + "/quote")
                            .retrieve()
                            .bodyToMono(String.class)
                            .onErrorResume(OutgoingCallThrottledException.class, (ex) -> {
                                refused.incrementAndGet();
                                return Mono.empty();
                            }))
                    .collectList()
                    .block(Duration.ofSeconds(10));
            assertThat(bodies).hasSize(3);
            assertThat(refused).hasValue(5);
            assertThat(this.server.calls()).isEqualTo(3);
        });
    }

    @Test
    void aWebClientFromBootsBuilderIsChargedOncePerCall() {
        this.contextRunner.run((context) -> assertChargedOncePerCall(
                context.getBean(WebClient.Builder.class).build(), context.getBean(Throttler.class)));
    }

    @Test
    void aWebClientFromABuilderTheApplicationDeclaresWithBootsCustomizersIsChargedOncePerCall() {
        this.contextRunner.withUserConfiguration(OwnBuilder.class).run((context) -> {
            assertThat(context.getBeanNamesForType(WebClient.Builder.class))
                    .as("the application's builder in place of Boot's")
                    .containsExactly("ownWebClientBuilder");
            assertChargedOncePerCall(
                    context.getBean(WebClient.Builder.class).build(), context.getBean(Throttler.class));
        });
    }

    @Test
    void aWebClientFromABuilderTheApplicationDeclaresWithoutCustomizersIsThrottledToo() {
        this.contextRunner
                .withUserConfiguration(OwnBuilder.class)
                .withPropertyValues("test.own-builder.customized=false")
                .run((context) -> assertChargedOncePerCall(
                        context.getBean(WebClient.Builder.class).build(), context.getBean(Throttler.class)));
    }

    @Test
    void withoutBootsWebClientModuleABuilderBeanIsStillThrottledOncePerCall() {
        this.contextRunner
                // as an application without the module: neither its classes nor its auto-configurations
                .withClassLoader(new FilteredClassLoader("org.springframework.boot.webclient"))
                .withPropertyValues("spring.autoconfigure.exclude="
                        + "org.springframework.boot.webclient.autoconfigure.WebClientAutoConfiguration,"
                        + "org.springframework.boot.webclient.autoconfigure.WebClientObservationAutoConfiguration,"
                        + "org.springframework.boot.webclient.autoconfigure.service"
                        + ".ReactiveHttpServiceClientAutoConfiguration")
                .withUserConfiguration(PlainBuilder.class)
                .run((context) -> {
                    assertThat(context).doesNotHaveBean("throttleWebClientCustomizer");
                    assertChargedOncePerCall(
                            context.getBean(WebClient.Builder.class).build(), context.getBean(Throttler.class));
                });
    }

    @Test
    void anApplicationWithoutWebFluxGetsNoneOfTheWebClientBeans() {
        this.contextRunner
                .withClassLoader(new FilteredClassLoader("org.springframework.web.reactive"))
                .run((context) -> {
                    assertThat(context).hasSingleBean(ThrottledClients.class);
                    assertThat(context).doesNotHaveBean(ThrottledWebClients.class);
                    assertThat(context).doesNotHaveBean("throttleWebClientBuilders");
                    assertThat(context).doesNotHaveBean("throttleWebClientCustomizer");
                });
    }

    private void assertChargedOncePerCall(WebClient client, Throttler throttler) {
        String key = this.server.url().substring("http://".length());
        for (int i = 1; i <= 3; i++) {
            client.get()
                    .uri(this.server.url() + "/quote")
                    .retrieve()
                    .bodyToMono(String.class)
                    .block(Duration.ofSeconds(5));
            assertThat(throttler.peek("upstream", key).remaining())
                    .as("left after call %d", i)
                    .isEqualTo(3 - i);
        }
        assertThat(this.server.calls()).isEqualTo(3);
    }

    @Test
    void aWebClientCallWaitsForItsTurnOnATimer() {
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.policy=quick", "throttle.clients.quotes.wait=2s")
                .run((context) -> {
                    WebClient client = context.getBean(WebClient.Builder.class).build();
                    long start = System.nanoTime();
                    List<String> bodies = Flux.range(0, 3)
                            .flatMap((i) -> client.get()
                                    .uri(this.server.url() + "/quote")
                                    .retrieve()
                                    .bodyToMono(String.class))
                            .collectList()
                            .block(Duration.ofSeconds(10));
                    assertThat(bodies).hasSize(3);
                    assertThat(System.nanoTime() - start)
                            .as("three calls at once, sent 300 ms apart")
                            .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(599));
                    assertThat(this.server.calls()).isEqualTo(3);
                });
    }

    @Test
    void aWebClientCallCancelledWhileItWaitsGivesItsTurnBackAndIsNeverSent() {
        this.contextRunner
                .withPropertyValues("throttle.clients.quotes.policy=slow", "throttle.clients.quotes.wait=30s")
                .run((context) -> {
                    WebClient client = context.getBean(WebClient.Builder.class).build();
                    Throttler throttler = context.getBean(Throttler.class);
                    String key = this.server.url().substring("http://".length());
                    client.get()
                            .uri(this.server.url() + "/quote")
                            .retrieve()
                            .bodyToMono(String.class)
                            .block(Duration.ofSeconds(5));
                    Disposable waiting = client.get()
                            .uri(this.server.url() + "/quote")
                            .retrieve()
                            .bodyToMono(String.class)
                            .subscribe();
                    Eventually.until(
                            "the waiter reserved its turn",
                            () -> throttler.peek("slow", key).retryAfterMillis() > 10_000);
                    waiting.dispose();
                    Eventually.until(
                            "the turn is back",
                            () -> throttler.peek("slow", key).retryAfterMillis() <= 10_000);
                    assertThat(this.server.calls())
                            .as("the cancelled call was never sent")
                            .isEqualTo(1);
                });
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class Application {}

    /** A {@code WebClient.Builder} bean built without any customizer. */
    @Configuration(proxyBeanMethods = false)
    static class PlainBuilder {

        @Bean
        @Scope("prototype")
        WebClient.Builder plainWebClientBuilder() {
            return WebClient.builder();
        }
    }

    /**
     * A {@code WebClient.Builder} the application declares in place of Boot's: built with Boot's
     * customizers, as Boot builds its own, unless {@code test.own-builder.customized=false}.
     */
    @Configuration(proxyBeanMethods = false)
    static class OwnBuilder {

        @Bean
        @Scope("prototype")
        WebClient.Builder ownWebClientBuilder(
                ObjectProvider<WebClientCustomizer> customizers,
                @Value("${test.own-builder.customized:true}") boolean customized) {
            WebClient.Builder builder = WebClient.builder();
            if (customized) {
                customizers.orderedStream().forEach((customizer) -> customizer.customize(builder));
            }
            return builder;
        }
    }
}
