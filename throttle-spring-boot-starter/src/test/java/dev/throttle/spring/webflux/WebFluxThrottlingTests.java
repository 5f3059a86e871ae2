package dev.throttle.spring.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleWebFluxAutoConfiguration;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * WebFlux handlers through a real (Netty) port: the same 429 contract as Spring MVC.
 */
@SpringBootTest(
        classes = {WebFluxTestApplication.class, PlainEndpoints.class},
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.main.web-application-type=reactive",
            "throttle.policies.api.algorithm=gcra",
            "throttle.policies.api.limit=3",
            "throttle.policies.api.period=60s",
            "throttle.policies.login.algorithm=lockout",
            "throttle.policies.login.timeouts=1s,2s",
            "throttle.policies.login.reset-on-success=true"
        })
class WebFluxThrottlingTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    @LocalServerPort
    int port;

    @Autowired
    ManualTimeSource clock;

    @Autowired
    MemoryThrottleStore store;

    @BeforeEach
    void clearState() {
        this.store.clear();
    }

    private HttpResponse<String> get(String path) throws Exception {
        return client.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + path))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> login(String user, String password) throws Exception {
        return client.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + "/login"))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(
                                "{\"user\":\"" + user + "\",\"password\":\"" + password + "\"}"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aMonoHandlerGetsHeadersWhenAllowedAndTheSame429ProblemAsSpringMvcWhenRefused() throws Exception {
        HttpResponse<String> allowed = get("/mono");
        assertThat(allowed.statusCode()).isEqualTo(200);
        assertThat(allowed.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=3;w=60");
        assertThat(allowed.headers().firstValue("RateLimit")).hasValue("\"api\";r=2;t=20");
        get("/mono");
        get("/mono");
        HttpResponse<String> refused = get("/mono");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("20");
        assertThat(refused.headers().firstValue("RateLimit"))
                .as("t is the refusal's own wait, as Retry-After")
                .hasValue("\"api\";r=0;t=20");
        assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(refused.body())
                .contains("\"type\":\"https://iana.org/assignments/http-problem-types#quota-exceeded\"")
                .contains("\"title\":\"Too Many Requests\"")
                .contains("\"status\":429")
                .contains("\"detail\":\"Too many requests under policy 'api'; retry after 20 seconds.\"")
                .contains("\"violated-policies\":[\"api\"]");
        this.clock.advance(Duration.ofSeconds(20));
        assertThat(get("/mono").statusCode()).isEqualTo(200);
    }

    @Test
    void aFluxHandlerIsThrottledPerSubscription() throws Exception {
        for (int i = 0; i < 3; i++) {
            HttpResponse<String> response = get("/flux");
            assertThat(response.statusCode()).isEqualTo(200);
            assertThat(response.body()).contains("a").contains("c");
        }
        assertThat(get("/flux").statusCode()).isEqualTo(429);
        assertThat(get("/mono").statusCode()).as("the same #ip bucket").isEqualTo(429);
    }

    @Test
    void aPlainValueHandlerIsThrottledToo() throws Exception {
        for (int i = 0; i < 3; i++) {
            assertThat(get("/plain").statusCode()).isEqualTo(200);
        }
        HttpResponse<String> refused = get("/plain");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("20");
    }

    @Test
    void resetOnSuccessAndFailedResponseEntitiesWorkReactively() throws Exception {
        assertThat(login("ann", "guess").statusCode()).isEqualTo(401);
        assertThat(login("ann", "secret").statusCode()).isEqualTo(429);
        this.clock.advance(Duration.ofSeconds(1));
        assertThat(login("ann", "secret").statusCode()).isEqualTo(200);
        assertThat(login("ann", "secret").statusCode())
                .as("success cleared the lockout")
                .isEqualTo(200);
    }

    @Test
    void aPlainValueHandlerWithABlockingStoreFailsAtStartup() {
        new ReactiveWebApplicationContextRunner()
                .withConfiguration(
                        AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleWebFluxAutoConfiguration.class))
                .withBean(PlainEndpoints.class)
                .withBean(dev.throttle.ThrottleStore.class, BlockingStore::new)
                .withPropertyValues(
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=3",
                        "throttle.policies.api.period=60s")
                .run((context) -> {
                    assertThat(context).hasFailed();
                    Throwable failure = context.getStartupFailure();
                    while (!(failure instanceof ThrottleConfigurationException) && failure.getCause() != null) {
                        failure = failure.getCause();
                    }
                    assertThat(failure)
                            .isInstanceOf(ThrottleConfigurationException.class)
                            .hasMessage(
                                    "@Throttled on PlainEndpoints.plain() returns a plain value in a WebFlux application, "
                                            + "where it would call the store on an event-loop thread and block it: return Mono or Flux");
                });
    }

    /** A store that says it blocks (as the Redis store's synchronous calls do). */
    static final class BlockingStore implements dev.throttle.ThrottleStore {

        private final MemoryThrottleStore memory = new MemoryThrottleStore();

        @Override
        public dev.throttle.Limiter limiter(dev.throttle.Policy policy) {
            return this.memory.limiter(policy);
        }

        @Override
        public String kind() {
            return "blocking";
        }
    }

    @Test
    void aPlainValueHandlerThatNeedsTheRequestFailsAtStartup() {
        new ReactiveWebApplicationContextRunner()
                .withConfiguration(
                        AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleWebFluxAutoConfiguration.class))
                .withBean(PlainWithIp.class)
                .withPropertyValues(
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=3",
                        "throttle.policies.api.period=60s")
                .run((context) -> {
                    assertThat(context).hasFailed();
                    Throwable failure = context.getStartupFailure();
                    while (!(failure instanceof ThrottleConfigurationException) && failure.getCause() != null) {
                        failure = failure.getCause();
                    }
                    assertThat(failure)
                            .isInstanceOf(ThrottleConfigurationException.class)
                            .hasMessage(
                                    "@Throttled(policy = \"api\", key = \"#ip\") on PlainWithIp.hello() uses the request, "
                                            + "which a method returning a plain value cannot see in a WebFlux application: return Mono or Flux");
                });
    }

    @Test
    void everyPlainValueHandlerThatNeedsTheRequestIsNamedInOneStart() {
        new ReactiveWebApplicationContextRunner()
                .withConfiguration(
                        AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleWebFluxAutoConfiguration.class))
                .withBean(PlainPages.class)
                .withPropertyValues(
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=3",
                        "throttle.policies.api.period=60s")
                .run((context) -> {
                    assertThat(context).hasFailed();
                    Throwable failure = context.getStartupFailure();
                    while (!(failure instanceof ThrottleConfigurationException) && failure.getCause() != null) {
                        failure = failure.getCause();
                    }
                    assertThat(failure)
                            .isInstanceOf(ThrottleConfigurationException.class)
                            .hasMessageStartingWith("2 mistakes in the throttling configuration:")
                            .hasMessageContaining("on PlainPages.list() uses the request")
                            .hasMessageContaining("on PlainPages.form() uses the request");
                });
    }

    /** A controller throttled at class level whose handlers return plain values, as a Thymeleaf page's do. */
    @org.springframework.web.bind.annotation.RestController
    @Throttled(policy = "api", key = "#ip")
    static class PlainPages {

        @org.springframework.web.bind.annotation.GetMapping("/list")
        public String list() {
            return "list";
        }

        @org.springframework.web.bind.annotation.GetMapping("/form")
        public String form() {
            return "form";
        }
    }

    static class PlainWithIp {

        @Throttled(policy = "api", key = "#ip")
        public Map<String, String> hello() {
            return Map.of();
        }
    }
}
