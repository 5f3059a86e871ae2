package dev.throttle.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.ManualTimeSource;
import dev.throttle.Policy;
import dev.throttle.ThrottleListener;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.metrics.MicrometerThrottleListener;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * Shadow mode through a real port: a policy in shadow decides and charges as
 * usual but never refuses and sends no RateLimit headers for itself; each call it would have
 * refused counts once as {@code outcome=rejected, mode=shadow}, and listeners hear it. A policy that
 * enforces beside it on the same method keeps its headers and its refusals.
 */
@SpringBootTest(
        classes = ShadowModeHttpTests.ShadowApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.policies.trial.algorithm=fixed-window",
            "throttle.policies.trial.limit=2",
            "throttle.policies.trial.window=1m",
            "throttle.policies.trial.mode=shadow",
            "throttle.policies.enforced.algorithm=fixed-window",
            "throttle.policies.enforced.limit=5",
            "throttle.policies.enforced.window=1m",
            "throttle.policies.ruled.algorithm=fixed-window",
            "throttle.policies.ruled.limit=1",
            "throttle.policies.ruled.window=1m",
            "throttle.policies.ruled.mode=shadow",
            "throttle.http.rules[0].paths=/ruled",
            "throttle.http.rules[0].policy=ruled"
        })
class ShadowModeHttpTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    @LocalServerPort
    int port;

    @Autowired
    MeterRegistry registry;

    @Autowired
    Refusals refusals;

    @Test
    void aShadowPolicyNeverRefusesSendsNoHeadersAndCountsEachCallItWouldHaveRefusedOnce() throws Exception {
        for (int i = 1; i <= 5; i++) {
            HttpResponse<String> response = get("/shadowed");
            assertThat(response.statusCode()).as("call %d", i).isEqualTo(200);
            assertThat(response.headers().allValues("RateLimit-Policy"))
                    .as("call %d", i)
                    .singleElement()
                    .satisfies((policy) ->
                            assertThat(policy).startsWith("\"enforced\"").doesNotContain("trial"));
            assertThat(String.join(",", response.headers().allValues("RateLimit")))
                    .doesNotContain("trial");
        }
        assertThat(count("trial", "allowed", "shadow")).isEqualTo(2);
        assertThat(count("trial", "rejected", "shadow"))
                .as("calls 3, 4 and 5, once each")
                .isEqualTo(3);
        assertThat(count("enforced", "allowed", "enforce")).isEqualTo(5);
        assertThat(this.refusals.policies).containsExactly("trial", "trial", "trial");
        HttpResponse<String> sixth = get("/shadowed");
        assertThat(sixth.statusCode()).as("the enforcing policy still refuses").isEqualTo(429);
        assertThat(count("trial", "rejected", "shadow")).isEqualTo(4);
    }

    @Test
    void aUrlRuleNamingAShadowPolicyNeverRefusesEither() throws Exception {
        for (int i = 1; i <= 3; i++) {
            HttpResponse<String> response = get("/ruled");
            assertThat(response.statusCode()).as("call %d", i).isEqualTo(200);
            assertThat(response.headers().allValues("RateLimit-Policy"))
                    .as("call %d", i)
                    .isEmpty();
        }
        assertThat(count("ruled", "allowed", "shadow")).isEqualTo(1);
        assertThat(count("ruled", "rejected", "shadow")).isEqualTo(2);
    }

    private double count(String policy, String outcome, String mode) {
        return this.registry
                .get(MicrometerThrottleListener.DECISIONS)
                .tag("policy", policy)
                .tag("outcome", outcome)
                .tag("mode", mode)
                .counter()
                .count();
    }

    private HttpResponse<String> get(String path) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + path))
                .header("Accept", "application/json")
                .build();
        return client.send(request, HttpResponse.BodyHandlers.ofString());
    }

    static class Refusals implements ThrottleListener {

        final List<String> policies = new CopyOnWriteArrayList<>();

        @Override
        public void onRejected(Policy policy, @Nullable String key, Decision decision) {
            this.policies.add(policy.name());
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(ShadowApplication.Endpoints.class)
    static class ShadowApplication {

        @Bean
        ManualTimeSource manualTimeSource() {
            return new ManualTimeSource();
        }

        @Bean
        SimpleMeterRegistry simpleMeterRegistry() {
            return new SimpleMeterRegistry();
        }

        @Bean
        Refusals refusals() {
            return new Refusals();
        }

        @RestController
        static class Endpoints {

            @GetMapping("/shadowed")
            @Throttled(policy = "trial", key = "#ip")
            @Throttled(policy = "enforced", key = "#ip")
            String shadowed() {
                return "ok";
            }

            @GetMapping("/ruled")
            String ruled() {
                return "ok";
            }
        }
    }
}
