package dev.throttle.boot3;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;

/**
 * The HTTP contract of the starter (built against Boot 4) inside a Boot 3.5 Spring MVC application
 * on a real Tomcat port: RateLimit headers on every throttled response, and on refusal a 429 with
 * Retry-After and an application/problem+json body written by Boot 3.5's Jackson 2.
 */
@SpringBootTest(
        classes = MvcApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.policies.api.algorithm=gcra",
            "throttle.policies.api.limit=3",
            "throttle.policies.api.period=60s",
            "throttle.policies.burst.algorithm=token-bucket",
            "throttle.policies.burst.capacity=100",
            "throttle.policies.burst.refill-period=1s",
            "throttle.policies.login.algorithm=lockout",
            "throttle.policies.login.timeouts=1s,2s",
            "throttle.policies.login.reset-on-success=true"
        })
@Import(ManualClock.class)
class WebMvcOnBoot35Tests {

    @LocalServerPort
    int port;

    @Autowired
    ManualTimeSource clock;

    @Autowired
    MemoryThrottleStore store;

    @BeforeEach
    void clearState() {
        this.store.clear();
    }

    @Test
    void allowedCallsGet200WithRateLimitHeadersAndTheFourthGets429WithRetryAfterAndAProblemJsonBody() throws Exception {
        for (int remaining = 2; remaining >= 0; remaining--) {
            HttpResponse<String> allowed = Http.get(this.port, "/api");
            assertThat(allowed.statusCode()).isEqualTo(200);
            assertThat(allowed.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=3;w=60");
            assertThat(allowed.headers().firstValue("RateLimit")).hasValue("\"api\";r=" + remaining + ";t=20");
            assertThat(Http.json(allowed)).isEqualTo(Map.of("message", "ok"));
        }
        HttpResponse<String> refused = Http.get(this.port, "/api");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("20");
        assertThat(refused.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=3;w=60");
        assertThat(refused.headers().firstValue("RateLimit")).hasValue("\"api\";r=0;t=20");
        assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(Http.json(refused))
                .containsExactlyInAnyOrderEntriesOf(Map.of(
                        "type", "https://iana.org/assignments/http-problem-types#quota-exceeded",
                        "title", "Too Many Requests",
                        "status", 429,
                        "detail", "Too many requests under policy 'api'; retry after 20 seconds.",
                        "instance", "/api",
                        "violated-policies", List.of("api")));
    }

    @Test
    void retryAfterIsWholeSecondsRoundedUpAndNeverZero() throws Exception {
        for (int i = 0; i < 3; i++) {
            assertThat(Http.get(this.port, "/api").statusCode()).isEqualTo(200);
        }
        this.clock.advance(Duration.ofMillis(500));
        assertThat(Http.get(this.port, "/api").headers().firstValue("Retry-After"))
                .hasValue("20");
        this.clock.advance(Duration.ofMillis(19_499));
        HttpResponse<String> almost = Http.get(this.port, "/api");
        assertThat(almost.statusCode()).isEqualTo(429);
        assertThat(almost.headers().firstValue("Retry-After")).hasValue("1");
        this.clock.advance(Duration.ofMillis(1));
        assertThat(Http.get(this.port, "/api").statusCode()).isEqualTo(200);
    }

    @Test
    void severalPoliciesOnOneHandlerShareTheHeaderFieldsAndNoRawKeyLeaks() throws Exception {
        HttpResponse<String> response = Http.get(this.port, "/per-user?user=alice@example.com");
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("RateLimit-Policy"))
                .hasValue("\"api\";q=3;w=60, \"burst\";q=100;w=100");
        assertThat(response.headers().firstValue("RateLimit")).hasValue("\"api\";r=2;t=20, \"burst\";r=99;t=1");
        assertThat(response.headers().map().toString()).doesNotContain("alice").doesNotContain("127.0.0.1");
    }

    @Test
    void aLockedOutLoginIsRefusedUntilItsTimeoutAndASuccessfulLoginResetsTheLockout() throws Exception {
        String wrong = "{\"email\":\"Alice@Example.com \",\"password\":\"guess\"}";
        String right = "{\"email\":\"alice@example.com\",\"password\":\"wonderland\"}";
        assertThat(Http.postJson(this.port, "/login", wrong).statusCode()).isEqualTo(401);
        HttpResponse<String> locked = Http.postJson(this.port, "/login", right);
        assertThat(locked.statusCode())
                .as("same e-mail after trim and lower-case")
                .isEqualTo(429);
        assertThat(locked.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(Http.json(locked)).containsEntry("violated-policies", List.of("login"));
        this.clock.advance(Duration.ofSeconds(1));
        assertThat(Http.postJson(this.port, "/login", right).statusCode()).isEqualTo(200);
        assertThat(Http.postJson(this.port, "/login", wrong).statusCode())
                .as("the success cleared the lockout, so this attempt is the first again")
                .isEqualTo(401);
    }

    @Test
    void unthrottledHandlersGetNoRateLimitHeaders() throws Exception {
        HttpResponse<String> response = Http.get(this.port, "/open");
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("RateLimit")).isEmpty();
        assertThat(response.headers().firstValue("RateLimit-Policy")).isEmpty();
    }
}
