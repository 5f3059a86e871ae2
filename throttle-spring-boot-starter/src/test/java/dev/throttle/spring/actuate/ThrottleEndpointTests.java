package dev.throttle.spring.actuate;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleEndpointAutoConfiguration;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The {@code throttle} actuator endpoint over HTTP.
 */
class ThrottleEndpointTests {

    @Test
    void theEndpointBacksOffWhenTheApplicationDefinesItsOwn() {
        WebApplicationContextRunner runner = new WebApplicationContextRunner()
                .withConfiguration(
                        AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleEndpointAutoConfiguration.class))
                .withPropertyValues(
                        "management.endpoints.web.exposure.include=throttle",
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=10",
                        "throttle.policies.api.period=1m");
        runner.run((context) -> assertThat(context).hasSingleBean(ThrottleEndpoint.class));
        runner.withBean("ownThrottleEndpoint", ThrottleEndpoint.class)
                .run((context) -> assertThat(context)
                        .hasSingleBean(ThrottleEndpoint.class)
                        .hasBean("ownThrottleEndpoint"));
    }

    private static final HttpClient client = HttpClient.newHttpClient();

    static HttpResponse<String> send(int port, String method, String path) throws Exception {
        return client.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                        .method(method, HttpRequest.BodyPublishers.noBody())
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class EndpointApplication {}

    @Nested
    @SpringBootTest(
            classes = EndpointApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "management.endpoints.web.exposure.include=throttle",
                "management.endpoint.throttle.access=unrestricted",
                "throttle.policies.login.algorithm=lockout",
                "throttle.policies.login.timeouts=1m,5m",
                "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=10",
                "throttle.policies.api.period=1m"
            })
    class Exposed {

        @LocalServerPort
        int port;

        @Autowired
        Throttler throttler;

        @Test
        void listsThePoliciesWithTheirSettings() throws Exception {
            HttpResponse<String> response = send(this.port, "GET", "/actuator/throttle");
            assertThat(response.statusCode()).isEqualTo(200);
            assertThat(response.body())
                    .contains("\"store\":\"memory\"")
                    .contains(
                            "\"login\":{\"algorithm\":\"lockout\",\"timeouts\":[\"PT1M\",\"PT5M\"],\"expire-after\":\"PT1H\","
                                    + "\"mode\":\"enforce\"}")
                    .contains("\"api\":{\"algorithm\":\"gcra\",\"limit\":10,\"period\":\"PT1M\",\"mode\":\"enforce\"}");
        }

        @Test
        void peeksAKeyWithoutConsumingAndDeleteUnlocksIt() throws Exception {
            this.throttler.tryAcquire("login", "alice@example.com");
            for (int i = 0; i < 3; i++) {
                HttpResponse<String> peek = send(this.port, "GET", "/actuator/throttle/login/alice@example.com");
                assertThat(peek.statusCode()).isEqualTo(200);
                assertThat(peek.body()).contains("\"allowed\":false").contains("\"remaining\":0");
            }
            assertThat(this.throttler.tryAcquire("login", "alice@example.com").allowed())
                    .isFalse();
            HttpResponse<String> reset = send(this.port, "DELETE", "/actuator/throttle/login/alice@example.com");
            assertThat(reset.statusCode()).isEqualTo(200);
            assertThat(this.throttler.tryAcquire("login", "alice@example.com").allowed())
                    .as("unlocked")
                    .isTrue();
        }

        @Test
        void anUnknownPolicyIsNotFoundAndResettingItIsABadRequestNotAnEmptySuccess() throws Exception {
            assertThat(send(this.port, "GET", "/actuator/throttle/nope/k").statusCode())
                    .isEqualTo(404);
            HttpResponse<String> reset = send(this.port, "DELETE", "/actuator/throttle/nope/k");
            assertThat(reset.statusCode()).isEqualTo(400);
        }
    }

    @Nested
    @SpringBootTest(
            classes = EndpointApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=10",
                "throttle.policies.api.period=1m"
            })
    class NotExposed {

        @LocalServerPort
        int port;

        @Test
        void isNotReachableUnlessTheApplicationExposesIt() throws Exception {
            assertThat(send(this.port, "GET", "/actuator/throttle").statusCode())
                    .isEqualTo(404);
        }
    }
}
