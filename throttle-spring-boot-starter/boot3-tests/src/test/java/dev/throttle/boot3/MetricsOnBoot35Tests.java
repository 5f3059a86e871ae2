package dev.throttle.boot3;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.metrics.MicrometerThrottleListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Import;

/**
 * Micrometer meters in a Boot 3.5 application with Actuator: the starter's metrics
 * auto-configuration runs after Boot 3.5's meter registry auto-configuration, so it sees the
 * registry, and decisions are counted by policy, outcome and store.
 */
@SpringBootTest(
        classes = MvcApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "management.endpoints.web.exposure.include=metrics",
            "throttle.policies.api.algorithm=gcra",
            "throttle.policies.api.limit=2",
            "throttle.policies.api.period=60s",
            "throttle.policies.burst.algorithm=token-bucket",
            "throttle.policies.burst.capacity=100",
            "throttle.policies.burst.refill-period=1s",
            "throttle.policies.login.algorithm=lockout",
            "throttle.policies.login.timeouts=1s"
        })
@Import(ManualClock.class)
class MetricsOnBoot35Tests {

    @LocalServerPort
    int port;

    @Autowired
    MeterRegistry registry;

    @Autowired
    ApplicationContext applicationContext;

    @Autowired
    MemoryThrottleStore store;

    @BeforeEach
    void clearState() {
        this.store.clear();
    }

    private double count(String outcome) {
        Counter counter = this.registry
                .find("throttle.decisions")
                .tags("policy", "api", "outcome", outcome, "store", "memory")
                .counter();
        return (counter != null) ? counter.count() : 0;
    }

    private long latencyCount() {
        Timer timer = this.registry
                .find("throttle.store.latency")
                .tags("policy", "api", "store", "memory")
                .timer();
        return (timer != null) ? timer.count() : 0;
    }

    @Test
    void throttleDecisionsIsCountedByPolicyOutcomeAndStoreAndTheStoreIsTimed() throws Exception {
        assertThat(this.applicationContext.getBeansOfType(MicrometerThrottleListener.class))
                .as("the metrics auto-configuration saw Boot 3.5's MeterRegistry")
                .hasSize(1);
        double allowed = count("allowed");
        double rejected = count("rejected");
        double error = count("error");
        long timed = latencyCount();
        for (int i = 0; i < 5; i++) {
            Http.get(this.port, "/api");
        }
        assertThat(count("allowed")).isEqualTo(allowed + 2);
        assertThat(count("rejected")).isEqualTo(rejected + 3);
        assertThat(count("error")).isEqualTo(error);
        assertThat(latencyCount()).isEqualTo(timed + 5);
        for (Meter meter : this.registry.getMeters()) {
            assertThat(meter.getId().getTags().toString()).as("no key in a tag").doesNotContain("127.0.0.1");
        }
    }

    @Test
    void theCounterIsVisibleThroughBoot35sMetricsEndpoint() throws Exception {
        double before = rejectedThroughTheEndpoint();
        for (int i = 0; i < 3; i++) {
            Http.get(this.port, "/api");
        }
        assertThat(rejectedThroughTheEndpoint()).isEqualTo(before + 1);
    }

    private double rejectedThroughTheEndpoint() throws Exception {
        HttpResponse<String> response = Http.get(
                this.port, "/actuator/metrics/throttle.decisions?tag=policy:api&tag=outcome:rejected&tag=store:memory");
        if (response.statusCode() == 404) {
            return 0;
        }
        assertThat(response.statusCode()).isEqualTo(200);
        Map<String, Object> body = Http.json(response);
        assertThat(body).containsEntry("name", "throttle.decisions");
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> measurements = (List<Map<String, Object>>) body.get("measurements");
        assertThat(measurements)
                .singleElement()
                .satisfies((measurement) -> assertThat(measurement).containsEntry("statistic", "COUNT"));
        return ((Number) measurements.get(0).get("value")).doubleValue();
    }
}
