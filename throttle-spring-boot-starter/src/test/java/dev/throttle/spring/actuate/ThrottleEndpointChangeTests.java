package dev.throttle.spring.actuate;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.autoconfigure.ThrottlePolicies;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.cloud.context.environment.EnvironmentChangeEvent;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * Changing a policy at run time: {@code POST /actuator/throttle/{policy}} with the
 * YAML names of the settings to change, validated as at startup (a mistake is a 400 naming the
 * property, and changes nothing), answered with the policy as now applied; keys keep their state;
 * only where the endpoint's access allows writes. And the same through the environment.
 */
class ThrottleEndpointChangeTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    static HttpResponse<String> post(int port, String path, String json) throws Exception {
        return client.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(json))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class EndpointApplication {}

    abstract static class TenCallsUsed {

        @LocalServerPort
        int port;

        @Autowired
        Throttler throttler;

        @Autowired
        MemoryThrottleStore store;

        @BeforeEach
        void useTen() {
            this.store.clear();
            assertThat(this.throttler.tryAcquire("api", "alice", 10).allowed()).isTrue();
        }
    }

    @Nested
    @SpringBootTest(
            classes = EndpointApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "management.endpoints.web.exposure.include=throttle",
                "management.endpoint.throttle.access=unrestricted",
                "throttle.policies.api.algorithm=token-bucket",
                "throttle.policies.api.capacity=10",
                "throttle.policies.api.refill-period=1m",
                "throttle.policies.api.plans.pro.capacity=100"
            })
    class WriteAccessGranted extends TenCallsUsed {

        @Autowired
        ThrottlePolicies policies;

        @Autowired
        ConfigurableEnvironment environment;

        @Autowired
        ApplicationEventPublisher events;

        @BeforeEach
        void configuredNumbers() {
            this.policies.update(
                    "api", Map.of("capacity", 10, "refill-period", "1m", "plans.pro.capacity", 100, "mode", "enforce"));
        }

        @Test
        void aChangeAppliesAtOnceAndEveryKeyKeepsWhatItUsed() throws Exception {
            HttpResponse<String> changed = post(
                    this.port,
                    "/actuator/throttle/api",
                    "{\"capacity\": 30, \"refill-period\": \"30s\", \"plans.pro.capacity\": 300}");
            assertThat(changed.statusCode()).as(changed.body()).isEqualTo(200);
            assertThat(changed.body())
                    .contains(
                            "\"capacity\":30",
                            "\"refill-period\":\"PT30S\"",
                            "\"pro\":{\"capacity\":300",
                            "\"mode\":\"enforce\"");
            assertThat(this.throttler.peek("api", "alice").remaining())
                    .as("30 - 10 used")
                    .isEqualTo(20);
            assertThat(this.throttler.tryAcquire("api", "pro", "alice", 1).remaining())
                    .isEqualTo(289);
        }

        @Test
        void aBadValueIsA400NamingThePropertyAndChangesNothing() throws Exception {
            for (String json : new String[] {
                "{\"capacity\": 0}",
                "{\"capacity\": \"many\"}",
                "{\"limt\": 3}",
                "{\"capacity\": 20, \"algorithm\": \"gcra\"}",
                "{\"plans.pro.limit\": 3}",
                "{\"plans.pro\": 3}"
            }) {
                HttpResponse<String> refused = post(this.port, "/actuator/throttle/api", json);
                assertThat(refused.statusCode()).as(json).isEqualTo(400);
                assertThat(refused.body()).as(json).contains("throttle.policies.api.");
            }
            assertThat(post(this.port, "/actuator/throttle/api", "{\"capacity\": 0}")
                            .body())
                    .contains("throttle.policies.api.capacity must be between 1 and 8388607, was 0");
            assertThat(post(this.port, "/actuator/throttle/api", "{\"capacity\": \"many\"}")
                            .body())
                    .contains("throttle.policies.api.capacity cannot be 'many'");
            assertThat(post(this.port, "/actuator/throttle/api", "{\"limt\": 3}")
                            .body())
                    .contains("throttle.policies.api.limt is not a setting of a policy");
            assertThat(post(this.port, "/actuator/throttle/api", "{\"refill-period\": 60}")
                            .body())
                    .contains("throttle.policies.api.refill-period is 60, a number without a unit");
            // another algorithm is said to be one that cannot change, not judged by its parameters
            assertThat(post(this.port, "/actuator/throttle/api", "{\"algorithm\": \"fixed-window\"}")
                            .body())
                    .contains("throttle.policies.api.algorithm cannot change at run time (token-bucket)")
                    .doesNotContain("means nothing")
                    .doesNotContain("needs a value");
            assertThat(this.throttler.policy("api").quota())
                    .as("nothing changed")
                    .isEqualTo(10);
            assertThat(this.throttler.plans("api").get("pro").quota()).isEqualTo(100);
            assertThat(post(this.port, "/actuator/throttle/nope", "{\"capacity\": 3}")
                            .statusCode())
                    .isEqualTo(404);
        }

        @Test
        void aChangeOfOneSettingOfAPlanKeepsThePlansOtherSettings() throws Exception {
            assertThat(post(this.port, "/actuator/throttle/api", "{\"plans.pro.refill-period\": \"2m\"}")
                            .statusCode())
                    .isEqualTo(200);
            assertThat(this.throttler.plans("api").get("pro").quota())
                    .as("the plan's capacity, not named, is kept (not the policy's 10)")
                    .isEqualTo(100);
            assertThat(this.throttler.plans("api").get("pro").toString()).contains("refillPeriod=PT2M");
        }

        @Test
        void aSettingReadOnlyAtStartupIsA400RatherThanAChangeThatDoesNothing() throws Exception {
            for (String[] change : new String[][] {
                {"{\"wait\": \"5s\"}", "wait"},
                {"{\"max-debt\": 3}", "max-debt"},
                {"{\"failure-mode\": \"closed\"}", "failure-mode"},
                {"{\"near-cache\": false}", "near-cache"},
                {"{\"durability\": \"replicated\"}", "durability"}
            }) {
                HttpResponse<String> refused = post(this.port, "/actuator/throttle/api", change[0]);
                assertThat(refused.statusCode()).as(change[0]).isEqualTo(400);
                assertThat(refused.body())
                        .as(change[0])
                        .contains("throttle.policies.api." + change[1]
                                + " is read when the application starts and cannot change at run time");
            }
            assertThat(post(this.port, "/actuator/throttle/api", "{\"capacity\": 12, \"failure-mode\": \"closed\"}")
                            .statusCode())
                    .isEqualTo(400);
            assertThat(this.throttler.policy("api").quota())
                    .as("nothing changed")
                    .isEqualTo(10);
        }

        @Test
        void shadowModeCanBeTurnedOnAndOffAtRunTime() throws Exception {
            assertThat(post(this.port, "/actuator/throttle/api", "{\"mode\": \"shadow\"}")
                            .body())
                    .contains("\"mode\":\"shadow\"");
            assertThat(this.policies.isShadow("api")).isTrue();
            assertThat(post(this.port, "/actuator/throttle/api", "{\"mode\": \"enforce\"}")
                            .body())
                    .contains("\"mode\":\"enforce\"");
            assertThat(this.policies.isShadow("api")).isFalse();
        }

        @Test
        void anEnvironmentChangeEventAppliesTheEnvironmentsSettings() {
            this.environment
                    .getPropertySources()
                    .addFirst(new MapPropertySource("changed", Map.of("throttle.policies.api.capacity", "40")));
            try {
                this.events.publishEvent(new EnvironmentChangeEvent(this));
                assertThat(this.throttler.policy("api").quota()).isEqualTo(40);
                assertThat(this.throttler.peek("api", "alice").remaining()).isEqualTo(30);
            } finally {
                this.environment.getPropertySources().remove("changed");
                this.events.publishEvent(new EnvironmentChangeEvent(this));
            }
            assertThat(this.throttler.policy("api").quota()).isEqualTo(10);
        }
    }

    @Nested
    @SpringBootTest(
            classes = EndpointApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "management.endpoints.web.exposure.include=*",
                "throttle.policies.api.algorithm=token-bucket",
                "throttle.policies.api.capacity=10",
                "throttle.policies.api.refill-period=1m"
            })
    class ExposedWithoutWriteAccess extends TenCallsUsed {

        @Test
        void aChangeIsRefusedAndNothingChanges() throws Exception {
            HttpResponse<String> refused = post(this.port, "/actuator/throttle/api", "{\"capacity\": 1000}");
            assertThat(refused.statusCode()).isIn(404, 405);
            assertThat(this.throttler.policy("api").quota()).isEqualTo(10);
        }
    }
}
