package dev.throttle.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.annotation.Throttled;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.BeforeEach;
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
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/**
 * Several limits in one policy through a real port: a call passes only when
 * every limit allows it; {@code RateLimit-Policy} and {@code RateLimit} carry one item per limit,
 * named {@code "<policy>/<n>"}; {@code Retry-After} is the longest wait among the limits that
 * refuse; a plan overrides the limits as a whole; the actuator changes them at run time, each
 * limit keeping what the key used.
 */
@SpringBootTest(
        classes = SeveralLimitsHttpTests.SearchApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "management.endpoints.web.exposure.include=throttle",
            "management.endpoint.throttle.access=unrestricted",
            "throttle.policies.search.algorithm=token-bucket",
            "throttle.policies.search.limits[0].capacity=2",
            "throttle.policies.search.limits[0].refill-period=1s",
            "throttle.policies.search.limits[1].capacity=3",
            "throttle.policies.search.limits[1].refill-period=1h",
            "throttle.policies.search.plans.pro.limits[0].capacity=20",
            "throttle.policies.search.plans.pro.limits[0].refill-period=1s",
            "throttle.policies.search.plans.pro.limits[1].capacity=100",
            "throttle.policies.search.plans.pro.limits[1].refill-period=1h"
        })
class SeveralLimitsHttpTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    @LocalServerPort
    int port;

    @Autowired
    ManualTimeSource clock;

    @Autowired
    MemoryThrottleStore store;

    @Autowired
    Throttler throttler;

    @BeforeEach
    void fresh() throws Exception {
        this.store.clear();
        post(
                "/actuator/throttle/search",
                "{\"limits[0].capacity\": 2, \"limits[0].refill-period\": \"1s\", \"limits[1].capacity\": 3,"
                        + " \"limits[1].refill-period\": \"1h\"}");
    }

    @Test
    void eachLimitHasItsItemAndRetryAfterIsTheLongestWait() throws Exception {
        HttpResponse<String> first = get("/search", null);
        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(first.headers().firstValue("RateLimit-Policy"))
                .hasValue("\"search/1\";q=2;w=2, \"search/2\";q=3;w=10800");
        assertThat(first.headers().firstValue("RateLimit")).hasValue("\"search/1\";r=1;t=1, \"search/2\";r=2;t=3600");
        assertThat(get("/search", null).statusCode()).isEqualTo(200);
        HttpResponse<String> burst = get("/search", null);
        assertThat(burst.statusCode()).as("the burst limit refuses").isEqualTo(429);
        assertThat(burst.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(burst.headers().firstValue("RateLimit")).hasValue("\"search/1\";r=0;t=1, \"search/2\";r=1;t=3600");
        this.clock.advanceMillis(1_000);
        assertThat(get("/search", null).statusCode())
                .as("the refusal took nothing from the sustained limit")
                .isEqualTo(200);
        HttpResponse<String> both = get("/search", null);
        assertThat(both.statusCode()).isEqualTo(429);
        assertThat(both.headers().firstValue("Retry-After"))
                .as("the longest wait: the sustained limit's")
                .hasValue("3599");
        assertThat(both.headers().firstValue("RateLimit")).hasValue("\"search/1\";r=0;t=1, \"search/2\";r=0;t=3599");
        assertThat(both.body()).contains("\"violated-policies\":[\"search\"]");
    }

    @Test
    void aPlanOverridesTheLimitsAsAWholeAndTheKeyKeepsWhatEachLimitUsed() throws Exception {
        get("/search", null);
        get("/search", null);
        assertThat(get("/search", null).statusCode()).isEqualTo(429);
        HttpResponse<String> pro = get("/search", "pro");
        assertThat(pro.statusCode()).isEqualTo(200);
        assertThat(pro.headers().firstValue("RateLimit-Policy"))
                .hasValue("\"search/1\";q=20;w=20, \"search/2\";q=100;w=360000");
        assertThat(pro.headers().firstValue("RateLimit")).hasValue("\"search/1\";r=17;t=1, \"search/2\";r=97;t=3600");
    }

    @Test
    void theActuatorChangesTheLimitsAndEachLimitKeepsWhatTheKeyUsed() throws Exception {
        get("/search", null);
        get("/search", null);
        HttpResponse<String> changed = post(
                "/actuator/throttle/search",
                "{\"limits[0].capacity\": 4, \"limits[0].refill-period\": \"1s\", \"limits[1].capacity\": 10,"
                        + " \"limits[1].refill-period\": \"1h\"}");
        assertThat(changed.statusCode()).as(changed.body()).isEqualTo(200);
        assertThat(changed.body())
                .contains("\"limits\":[{\"capacity\":4,\"refill-tokens\":1,\"refill-period\":\"PT1S\"}");
        assertThat(get("/search", null).headers().firstValue("RateLimit"))
                .hasValue("\"search/1\";r=1;t=1, \"search/2\";r=7;t=3600");
        HttpResponse<String> bad =
                post("/actuator/throttle/search", "{\"limits[0].capacity\": 0, \"limits[0].refill-period\": \"1s\"}");
        assertThat(bad.statusCode()).isEqualTo(400);
        assertThat(bad.body()).contains("throttle.policies.search.limits[0].capacity");
        assertThat(this.throttler.policy("search").limits())
                .as("nothing changed")
                .hasSize(2);
        assertThat(this.throttler.policy("search").limits().get(1).quota()).isEqualTo(10);
    }

    private HttpResponse<String> get(String path, String plan) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + path))
                .header("Accept", "application/json");
        if (plan != null) {
            request.header("X-Plan", plan);
        }
        return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> post(String path, String json) throws Exception {
        return client.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + path))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(json))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(SearchApplication.Endpoints.class)
    static class SearchApplication {

        @Bean
        ManualTimeSource manualTimeSource() {
            return new ManualTimeSource();
        }

        @RestController
        static class Endpoints {

            @GetMapping("/search")
            @Throttled(policy = "search", key = "#ip", plan = "#plan")
            String search(@RequestHeader(name = "X-Plan", required = false) String plan) {
                return "ok";
            }
        }
    }
}
