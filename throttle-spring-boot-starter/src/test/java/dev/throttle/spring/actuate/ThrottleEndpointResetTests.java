package dev.throttle.spring.actuate;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.testing.Eventually;
import dev.throttle.testing.FlakyStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;

/**
 * An unlock never claims what it did not do: {@code DELETE /actuator/throttle/{policy}/{key}} says whether the reset reached
 * the store. While the store cannot be reached it answers 503 with a message that names the policy
 * and never the key, rather than a {@code reset: true} that leaves the user locked out.
 */
@SpringBootTest(
        classes = ThrottleEndpointResetTests.FlakyStoreApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "management.endpoints.web.exposure.include=throttle",
            "management.endpoint.throttle.access=unrestricted",
            "throttle.policies.login.algorithm=lockout",
            "throttle.policies.login.timeouts=1m,5m"
        })
class ThrottleEndpointResetTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    @LocalServerPort
    int port;

    @Autowired
    FlakyStore flaky;

    @Autowired
    Throttler throttler;

    @AfterEach
    void storeBack(@Autowired ResilientThrottleStore store) {
        this.flaky.comeBack();
        // each call while it is down starts a probe unless one runs (one started while it was down may)
        Eventually.until("a probe found the store", () -> {
            this.throttler.peek("login", "probe");
            return !store.isStoreDown();
        });
        assertThat(store.isStoreDown()).isFalse();
    }

    @Test
    void aResetThatCannotReachTheStoreIsA503NamingThePolicyNotTheKey() throws Exception {
        this.throttler.tryAcquire("login", "alice@example.com");
        this.flaky.goDown();
        HttpResponse<String> reset = delete("/actuator/throttle/login/alice@example.com");
        assertThat(reset.statusCode()).isEqualTo(503);
        assertThat(reset.body())
                .contains("\"policy\":\"login\"")
                .contains("\"reset\":false")
                .contains("The throttle store 'flaky' could not be reached for policy 'login': the key is not reset in "
                        + "it yet.")
                .doesNotContain("alice");
    }

    @Test
    void aResetThatReachesTheStoreSaysSo() throws Exception {
        this.throttler.tryAcquire("login", "bob@example.com");
        assertThat(this.throttler.peek("login", "bob@example.com").allowed()).isFalse();
        HttpResponse<String> reset = delete("/actuator/throttle/login/bob@example.com");
        assertThat(reset.statusCode()).isEqualTo(200);
        assertThat(reset.body()).isEqualTo("{\"policy\":\"login\",\"reset\":true}");
        assertThat(this.throttler.peek("login", "bob@example.com").allowed()).isTrue();
    }

    private HttpResponse<String> delete(String path) throws Exception {
        return client.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + path))
                        .DELETE()
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class FlakyStoreApplication {

        @Bean
        FlakyStore flakyStore() {
            return new FlakyStore(new MemoryThrottleStore(TimeSource.system(), 100), "flaky");
        }

        @Bean
        ResilientThrottleStore throttleStore(FlakyStore flaky) {
            return new ResilientThrottleStore(
                    flaky, FailureMode.LOCAL, new MemoryThrottleStore(TimeSource.system(), 100));
        }
    }
}
