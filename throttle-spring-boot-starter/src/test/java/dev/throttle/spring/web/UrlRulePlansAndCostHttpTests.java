package dev.throttle.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * A URL rule's plan and cost chosen per request, through a real Tomcat port: the plan
 * named by a header sets the numbers in {@code RateLimit-Policy} and when refusals start; an
 * unknown plan gets the base numbers, said once; a cost read from a query parameter is charged,
 * and one above what the policy can ever grant is refused.
 */
@SpringBootTest(
        classes = RulesTestApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.main.banner-mode=off",
            "throttle.policies.api.plans.free.limit=2",
            "throttle.policies.api.plans.pro.limit=5",
            "throttle.http.rules[0].paths=/api/hello",
            "throttle.http.rules[0].policy=api",
            "throttle.http.rules[0].key=#headers['X-Api-Key']",
            "throttle.http.rules[0].plan=#headers['X-Plan']",
            "throttle.http.rules[1].paths=/api/reports/{id}",
            "throttle.http.rules[1].policy=wide",
            "throttle.http.rules[1].key=#ip",
            "throttle.http.rules[1].cost=#params['rows']"
        })
@ExtendWith(OutputCaptureExtension.class)
class UrlRulePlansAndCostHttpTests {

    @LocalServerPort
    int port;

    @Autowired
    MemoryThrottleStore store;

    @Autowired
    Throttler throttler;

    @BeforeEach
    void clearState() {
        this.store.clear();
    }

    @Test
    void thePlanNamedByAHeaderSetsTheNumbersShownAndWhenRefusalsStart() throws Exception {
        assertThat(allowedBeforeRefusal("free-key", "free")).isEqualTo(2);
        assertThat(allowedBeforeRefusal("pro-key", "pro")).isEqualTo(5);
        assertThat(allowedBeforeRefusal("base-key", null))
                .as("no plan: the base numbers")
                .isEqualTo(3);
        HttpResponse<String> free = hello("other-free-key", "free");
        assertThat(free.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=2;w=60");
        HttpResponse<String> pro = hello("other-pro-key", "pro");
        assertThat(pro.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=5;w=60");
    }

    @Test
    void anUnknownPlanGetsTheBaseNumbersAndIsSaidOnce(CapturedOutput output) throws Exception {
        assertThat(allowedBeforeRefusal("gold-key", "gold")).isEqualTo(3);
        assertThat(hello("gold-key-2", "gold").headers().firstValue("RateLimit-Policy"))
                .hasValue("\"api\";q=3;w=60");
        assertThat(output.getOut().split("gold", -1).length - 1)
                .as("one WARN naming the plan")
                .isEqualTo(1);
        assertThat(output.getOut()).doesNotContain("gold-key");
    }

    @Test
    void aCostReadFromAQueryParameterIsChargedAtLeastOneAndBoundedByThePolicy() throws Exception {
        assertThat(UrlRulesHttpTests.get(this.port, "/api/reports/1?rows=30").statusCode())
                .isEqualTo(200);
        assertThat(this.throttler.peek("wide", "127.0.0.1").remaining()).isEqualTo(70);
        assertThat(UrlRulesHttpTests.get(this.port, "/api/reports/1?rows=0").statusCode())
                .isEqualTo(200);
        assertThat(UrlRulesHttpTests.get(this.port, "/api/reports/1").statusCode())
                .isEqualTo(200);
        assertThat(this.throttler.peek("wide", "127.0.0.1").remaining())
                .as("0 and none: 1 each")
                .isEqualTo(68);
        HttpResponse<String> never =
                UrlRulesHttpTests.get(this.port, "/api/reports/1?rows=101", "Accept", "application/json");
        assertThat(never.statusCode()).as("more than the bucket holds").isEqualTo(429);
        assertThat(this.throttler.peek("wide", "127.0.0.1").remaining()).isEqualTo(68);
        assertThat(UrlRulesHttpTests.get(this.port, "/api/reports/1?rows=69").statusCode())
                .isEqualTo(429);
        assertThat(UrlRulesHttpTests.get(this.port, "/api/reports/1?rows=68").statusCode())
                .isEqualTo(200);
    }

    private int allowedBeforeRefusal(String key, String plan) throws Exception {
        for (int i = 0; i < 10; i++) {
            if (hello(key, plan).statusCode() == 429) {
                return i;
            }
        }
        return 10;
    }

    private HttpResponse<String> hello(String key, String plan) throws Exception {
        return (plan != null)
                ? UrlRulesHttpTests.get(this.port, "/api/hello", "X-Api-Key", key, "X-Plan", plan)
                : UrlRulesHttpTests.get(this.port, "/api/hello", "X-Api-Key", key);
    }
}
