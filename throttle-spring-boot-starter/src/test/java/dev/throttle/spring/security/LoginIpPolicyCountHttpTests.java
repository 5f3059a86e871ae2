package dev.throttle.spring.security;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.memory.MemoryThrottleStore;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The ip-policy of Spring Security logins counts failures only unless its policy sets
 * {@code count}: with HTTP Basic every request of a signed-in client is a successful login, and
 * must not use up what the address has for wrong passwords. Through a real port and Spring
 * Security's real filter chain.
 */
class LoginIpPolicyCountHttpTests {

    @Nested
    @SpringBootTest(
            classes = LoginTestApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "throttle.policies.login-ip.algorithm=token-bucket",
                "throttle.policies.login-ip.capacity=5",
                "throttle.policies.login-ip.refill-period=1h",
                "throttle.security.authentication.ip-policy=login-ip"
            })
    class CountNotSet {

        @LocalServerPort
        int port;

        @Autowired
        MemoryThrottleStore store;

        LoginClient client;

        @BeforeEach
        void startClean() {
            this.store.clear();
            this.client = new LoginClient(this.port);
        }

        @Test
        void httpBasicSuccessesNeverExhaustTheAddressPolicy() throws Exception {
            String first = this.client
                    .basic("/api/me", "alice@example.com", "wonderland")
                    .headers()
                    .firstValue("RateLimit")
                    .orElseThrow();
            for (int i = 0; i < 20; i++) {
                HttpResponse<String> me = this.client.basic("/api/me", "alice@example.com", "wonderland");
                assertThat(me.statusCode()).as("request %d", i + 2).isEqualTo(200);
                assertThat(me.headers().firstValue("RateLimit"))
                        .as("each success gave back what it took")
                        .hasValue(first);
            }
        }

        @Test
        void failuresExhaustItAndThenEvenTheRightPasswordWaits() throws Exception {
            for (int i = 0; i < 4; i++) {
                assertThat(this.client
                                .basic("/api/me", "user" + i + "@example.com", "guess")
                                .statusCode())
                        .isEqualTo(401);
                assertThat(this.client
                                .basic("/api/me", "alice@example.com", "wonderland")
                                .statusCode())
                        .as("a success between failures takes nothing")
                        .isEqualTo(200);
            }
            assertThat(this.client
                            .basic("/api/me", "user4@example.com", "guess")
                            .statusCode())
                    .as("the fifth failure takes the last unit")
                    .isEqualTo(401);
            HttpResponse<String> refused = this.client.basic("/api/me", "alice@example.com", "wonderland");
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.body()).contains("\"violated-policies\":[\"login-ip\"]");
        }
    }

    @Nested
    @SpringBootTest(
            classes = LoginTestApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "throttle.policies.login-ip.algorithm=token-bucket",
                "throttle.policies.login-ip.capacity=5",
                "throttle.policies.login-ip.refill-period=1h",
                "throttle.policies.login-ip.count=all",
                "throttle.security.authentication.ip-policy=login-ip"
            })
    class CountSetToAll {

        @LocalServerPort
        int port;

        @Autowired
        MemoryThrottleStore store;

        @Test
        void everyAttemptUsesItUpAsConfigured() throws Exception {
            this.store.clear();
            LoginClient client = new LoginClient(this.port);
            for (int i = 0; i < 5; i++) {
                assertThat(client.basic("/api/me", "alice@example.com", "wonderland")
                                .statusCode())
                        .isEqualTo(200);
            }
            HttpResponse<String> refused = client.basic("/api/me", "alice@example.com", "wonderland");
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.body()).contains("\"violated-policies\":[\"login-ip\"]");
        }
    }
}
