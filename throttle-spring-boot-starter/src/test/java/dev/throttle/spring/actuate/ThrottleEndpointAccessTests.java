package dev.throttle.spring.actuate;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * Who may unlock an account: the {@code throttle} endpoint's reads are allowed wherever it is
 * exposed, its {@code DELETE} (a reset) only where the application grants write access with
 * {@code management.endpoint.throttle.access=unrestricted}. With
 * {@code management.endpoints.web.exposure.include=*} and no security, a default that allowed
 * writes would let anyone unlock any account. Over a real port.
 */
class ThrottleEndpointAccessTests {

    private static final String LOCKED = "/actuator/throttle/login/alice@example.com";

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

    abstract static class LockedOutUser {

        @LocalServerPort
        int port;

        @Autowired
        Throttler throttler;

        @Autowired
        MemoryThrottleStore store;

        @BeforeEach
        void lockOutAlice() {
            this.store.clear();
            assertThat(this.throttler.tryAcquire("login", "alice@example.com").allowed())
                    .isTrue();
            assertThat(this.throttler.peek("login", "alice@example.com").allowed())
                    .as("locked out")
                    .isFalse();
        }
    }

    @Nested
    @SpringBootTest(
            classes = EndpointApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "management.endpoints.web.exposure.include=*",
                "throttle.policies.login.algorithm=lockout",
                "throttle.policies.login.timeouts=1m,5m"
            })
    class ExposedToEveryoneWithoutAccessGranted extends LockedOutUser {

        @Test
        void readsAreAllowed() throws Exception {
            assertThat(send(this.port, "GET", "/actuator/throttle").statusCode())
                    .isEqualTo(200);
            HttpResponse<String> peek = send(this.port, "GET", LOCKED);
            assertThat(peek.statusCode()).isEqualTo(200);
            assertThat(peek.body()).contains("\"allowed\":false");
        }

        @Test
        void deleteIsRefusedAndTheUserStaysLockedOut() throws Exception {
            HttpResponse<String> reset = send(this.port, "DELETE", LOCKED);
            // the read operation still answers on this path: Spring MVC refuses the other method
            assertThat(reset.statusCode()).isEqualTo(405);
            assertThat(reset.headers().firstValue("Allow"))
                    .hasValueSatisfying(
                            (allow) -> assertThat(allow).contains("GET").doesNotContain("DELETE"));
            assertThat(this.throttler.peek("login", "alice@example.com").allowed())
                    .as("still locked out")
                    .isFalse();
        }
    }

    @Nested
    @SpringBootTest(
            classes = EndpointApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "management.endpoints.web.exposure.include=throttle",
                "management.endpoint.throttle.access=unrestricted",
                "throttle.policies.login.algorithm=lockout",
                "throttle.policies.login.timeouts=1m,5m"
            })
    class WriteAccessGranted extends LockedOutUser {

        @Test
        void deleteUnlocksTheUser() throws Exception {
            HttpResponse<String> reset = send(this.port, "DELETE", LOCKED);
            assertThat(reset.statusCode()).isEqualTo(200);
            assertThat(reset.body()).contains("\"reset\":true");
            assertThat(this.throttler.tryAcquire("login", "alice@example.com").allowed())
                    .as("unlocked")
                    .isTrue();
        }
    }

    @Nested
    @SpringBootTest(
            classes = EndpointApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "management.endpoints.web.exposure.include=*",
                "management.endpoints.access.default=unrestricted",
                "throttle.policies.login.algorithm=lockout",
                "throttle.policies.login.timeouts=1m,5m"
            })
    class WriteAccessGrantedToEveryEndpoint extends LockedOutUser {

        @Test
        void theApplicationWideDefaultGrantsItToo() throws Exception {
            // Boot's rule: an endpoint's own default applies only when neither its access property nor
            // management.endpoints.access.default is set, as docs/operations.md warns
            assertThat(send(this.port, "DELETE", LOCKED).statusCode()).isEqualTo(200);
            assertThat(this.throttler.peek("login", "alice@example.com").allowed())
                    .as("unlocked")
                    .isTrue();
        }
    }

    @Nested
    @SpringBootTest(
            classes = EndpointApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "management.endpoints.web.exposure.include=throttle",
                "management.endpoint.throttle.enabled=true",
                "throttle.policies.login.algorithm=lockout",
                "throttle.policies.login.timeouts=1m,5m"
            })
    class EnabledTheOldWay extends LockedOutUser {

        @Test
        void theOldEnabledFlagGrantsWritesToo() throws Exception {
            // Boot reads management.endpoint.<id>.enabled=true as unrestricted access, as docs/operations.md warns
            assertThat(send(this.port, "DELETE", LOCKED).statusCode()).isEqualTo(200);
            assertThat(this.throttler.peek("login", "alice@example.com").allowed())
                    .as("unlocked")
                    .isTrue();
        }
    }

    @Nested
    @SpringBootTest(
            classes = EndpointApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "management.endpoints.web.exposure.include=*",
                "management.endpoint.throttle.access=none",
                "throttle.policies.login.algorithm=lockout",
                "throttle.policies.login.timeouts=1m,5m"
            })
    class NoAccess {

        @LocalServerPort
        int port;

        @Test
        void neitherReadsNorWritesAreReachable() throws Exception {
            assertThat(send(this.port, "GET", "/actuator/throttle").statusCode())
                    .isEqualTo(404);
            assertThat(send(this.port, "DELETE", LOCKED).statusCode()).isEqualTo(404);
        }
    }
}
