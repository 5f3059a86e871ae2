package dev.throttle.boot3;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;

/**
 * The {@code throttle} actuator endpoint over HTTP in a Boot 3.5 application (Boot 3.5's endpoint
 * infrastructure and its Jackson 2 endpoint mapper): reads wherever it is exposed, a reset only
 * with {@code management.endpoint.throttle.access=unrestricted} (Boot 3.4 introduced endpoint access).
 */
class ActuatorEndpointOnBoot35Tests {

    @Nested
    @SpringBootTest(
            classes = MvcApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "management.endpoints.web.exposure.include=throttle",
                "management.endpoint.throttle.access=unrestricted",
                "throttle.policies.login.algorithm=lockout",
                "throttle.policies.login.timeouts=1m,5m",
                "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=10",
                "throttle.policies.api.period=1m",
                "throttle.policies.burst.algorithm=token-bucket",
                "throttle.policies.burst.capacity=5",
                "throttle.policies.burst.refill-period=2s"
            })
    @Import(ManualClock.class)
    class Exposed {

        @LocalServerPort
        int port;

        @Autowired
        Throttler throttler;

        @Autowired
        MemoryThrottleStore store;

        @BeforeEach
        void clearState() {
            this.store.clear();
        }

        @Test
        void getListsTheStoreAndEveryPolicyWithItsSettings() throws Exception {
            HttpResponse<String> response = Http.get(this.port, "/actuator/throttle");
            assertThat(response.statusCode()).isEqualTo(200);
            assertThat(Http.json(response))
                    .isEqualTo(Map.of(
                            "store",
                            "memory",
                            "policies",
                            Map.of(
                                    "login",
                                    Map.of(
                                            "algorithm",
                                            "lockout",
                                            "timeouts",
                                            List.of("PT1M", "PT5M"),
                                            "expire-after",
                                            "PT1H",
                                            "mode",
                                            "enforce"),
                                    "api",
                                    Map.of("algorithm", "gcra", "limit", 10, "period", "PT1M", "mode", "enforce"),
                                    "burst",
                                    Map.of(
                                            "algorithm",
                                            "token-bucket",
                                            "capacity",
                                            5,
                                            "refill-tokens",
                                            1,
                                            "refill-period",
                                            "PT2S",
                                            "mode",
                                            "enforce"))));
        }

        @Test
        void getOfAPolicyAndKeyPeeksWithoutConsumingAndDeleteUnlocksTheKey() throws Exception {
            assertThat(this.throttler.tryAcquire("login", "alice@example.com").allowed())
                    .isTrue();
            for (int i = 0; i < 3; i++) {
                HttpResponse<String> peek = Http.get(this.port, "/actuator/throttle/login/alice@example.com");
                assertThat(peek.statusCode()).isEqualTo(200);
                assertThat(Http.json(peek))
                        .containsEntry("policy", "login")
                        .containsEntry("allowed", false)
                        .containsEntry("remaining", 0)
                        .containsEntry("retryAfterMillis", 60_000);
            }
            HttpResponse<String> fresh = Http.get(this.port, "/actuator/throttle/api/bob");
            assertThat(Http.json(fresh))
                    .containsEntry("allowed", true)
                    .containsEntry("limit", 10)
                    .containsEntry("remaining", 10);
            assertThat(this.throttler.tryAcquire("login", "alice@example.com").allowed())
                    .as("still locked")
                    .isFalse();
            HttpResponse<String> reset = Http.delete(this.port, "/actuator/throttle/login/alice@example.com");
            assertThat(reset.statusCode()).isEqualTo(200);
            assertThat(Http.json(reset)).isEqualTo(Map.of("policy", "login", "reset", true));
            assertThat(this.throttler.tryAcquire("login", "alice@example.com").allowed())
                    .as("unlocked")
                    .isTrue();
        }

        @Test
        void anUnknownPolicyIsNotFound() throws Exception {
            assertThat(Http.get(this.port, "/actuator/throttle/nope/k").statusCode())
                    .isEqualTo(404);
            assertThat(Http.delete(this.port, "/actuator/throttle/nope/k").statusCode())
                    .as("a mistyped policy is not reported as unlocked")
                    .isEqualTo(400);
        }
    }

    @Nested
    @SpringBootTest(
            classes = MvcApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "management.endpoints.web.exposure.include=*",
                "throttle.policies.login.algorithm=lockout",
                "throttle.policies.login.timeouts=1m,5m",
                "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=10",
                "throttle.policies.api.period=1m",
                "throttle.policies.burst.algorithm=token-bucket",
                "throttle.policies.burst.capacity=5",
                "throttle.policies.burst.refill-period=2s"
            })
    @Import(ManualClock.class)
    class ExposedWithoutWriteAccess {

        @LocalServerPort
        int port;

        @Autowired
        Throttler throttler;

        @Autowired
        MemoryThrottleStore store;

        @BeforeEach
        void clearState() {
            this.store.clear();
        }

        @Test
        void readsAreAllowedButDeleteIsRefusedUntilTheApplicationGrantsWriteAccess() throws Exception {
            assertThat(this.throttler.tryAcquire("login", "alice@example.com").allowed())
                    .isTrue();
            HttpResponse<String> peek = Http.get(this.port, "/actuator/throttle/login/alice@example.com");
            assertThat(peek.statusCode()).isEqualTo(200);
            assertThat(Http.json(peek)).containsEntry("allowed", false);
            HttpResponse<String> reset = Http.delete(this.port, "/actuator/throttle/login/alice@example.com");
            assertThat(reset.statusCode())
                    .as("Boot 3.5 maps only the read operation")
                    .isEqualTo(405);
            assertThat(reset.headers().firstValue("Allow"))
                    .hasValueSatisfying(
                            (allow) -> assertThat(allow).contains("GET").doesNotContain("DELETE"));
            assertThat(this.throttler.tryAcquire("login", "alice@example.com").allowed())
                    .as("still locked")
                    .isFalse();
        }
    }

    @Nested
    @SpringBootTest(
            classes = MvcApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=10",
                "throttle.policies.api.period=1m",
                "throttle.policies.burst.algorithm=token-bucket",
                "throttle.policies.burst.capacity=5",
                "throttle.policies.burst.refill-period=2s",
                "throttle.policies.login.algorithm=lockout",
                "throttle.policies.login.timeouts=1m"
            })
    class NotExposed {

        @LocalServerPort
        int port;

        @Test
        void isNotReachableUnlessTheApplicationExposesIt() throws Exception {
            assertThat(Http.get(this.port, "/actuator/throttle").statusCode()).isEqualTo(404);
            HttpResponse<String> actuator = Http.get(this.port, "/actuator");
            assertThat(actuator.statusCode()).as("actuator itself is on").isEqualTo(200);
            assertThat(actuator.body()).contains("/actuator/health").doesNotContain("throttle");
        }
    }
}
