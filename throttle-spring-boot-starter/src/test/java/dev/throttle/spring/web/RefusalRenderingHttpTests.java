package dev.throttle.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.ThrottledException;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.annotation.Throttled;
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
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.servlet.config.annotation.CorsRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/**
 * Whoever renders a refusal, it carries its headers: the application's own
 * {@code @ExceptionHandler(ThrottledException.class)} wins over the starter's; a catch-all
 * {@code @ExceptionHandler(Exception.class)} does not swallow a refusal; a browser gets the error
 * page; and cross-origin scripts can read the headers where the application's CORS allows them.
 */
class RefusalRenderingHttpTests {

    static final String POLICY = "throttle.policies.api.algorithm=gcra";

    static final String LIMIT = "throttle.policies.api.limit=1";

    static final String PERIOD = "throttle.policies.api.period=60s";

    static final String ORIGIN = "https://app.example";

    @RestController
    static class Endpoints {

        @GetMapping("/api")
        @Throttled(policy = "api", key = "#ip")
        Map<String, String> api() {
            return Map.of("message", "ok");
        }

        @GetMapping("/ruled")
        Map<String, String> ruled() {
            return Map.of("message", "ruled");
        }
    }

    /** The application's own answer to a refusal. */
    @RestControllerAdvice
    static class OwnRefusalAdvice {

        @ExceptionHandler(ThrottledException.class)
        ResponseEntity<Map<String, Object>> refused(ThrottledException ex) {
            return ResponseEntity.status(HttpStatus.TOO_MANY_REQUESTS)
                    .body(Map.of("mine", true, "policy", ex.getPolicy().name()));
        }
    }

    /** A catch-all, as many applications have. */
    @RestControllerAdvice
    static class CatchAllAdvice {

        @ExceptionHandler(Exception.class)
        ResponseEntity<String> failed(Exception ex) {
            return ResponseEntity.status(HttpStatus.INTERNAL_SERVER_ERROR).body("something broke");
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import({Endpoints.class, OwnRefusalAdvice.class, CatchAllAdvice.class})
    static class OwnAdviceApp {

        @Bean
        ManualTimeSource manualTimeSource() {
            return new ManualTimeSource();
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import({Endpoints.class, CatchAllAdvice.class})
    static class CatchAllApp {

        @Bean
        ManualTimeSource manualTimeSource() {
            return new ManualTimeSource();
        }

        @Bean
        WebMvcConfigurer cors() {
            return new WebMvcConfigurer() {

                @Override
                public void addCorsMappings(CorsRegistry registry) {
                    registry.addMapping("/**").allowedOrigins(ORIGIN).exposedHeaders("X-Request-Id");
                }
            };
        }
    }

    @Nested
    @SpringBootTest(
            classes = OwnAdviceApp.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {POLICY, LIMIT, PERIOD})
    class OwnHandler {

        @LocalServerPort
        int port;

        @Autowired
        MemoryThrottleStore store;

        @BeforeEach
        void clearState() {
            this.store.clear();
        }

        @Test
        void theApplicationsOwnHandlerWinsAndTheHeadersAreKept() throws Exception {
            assertThat(UrlRulesHttpTests.get(this.port, "/api").statusCode()).isEqualTo(200);
            HttpResponse<String> refused = UrlRulesHttpTests.get(this.port, "/api", "Accept", "application/json");
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.body()).contains("\"mine\":true", "\"policy\":\"api\"");
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("60");
            assertThat(refused.headers().firstValue("RateLimit")).hasValue("\"api\";r=0;t=60");
            assertThat(refused.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=1;w=60");
        }
    }

    @Nested
    @SpringBootTest(
            classes = CatchAllApp.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                POLICY,
                LIMIT,
                PERIOD,
                "throttle.policies.rule.algorithm=gcra",
                "throttle.policies.rule.limit=1",
                "throttle.policies.rule.period=60s",
                "throttle.http.rules[0].paths=/ruled",
                "throttle.http.rules[0].policy=rule",
                "throttle.http.rules[0].key=#ip"
            })
    class CatchAllAndCors {

        @LocalServerPort
        int port;

        @Autowired
        MemoryThrottleStore store;

        @BeforeEach
        void clearState() {
            this.store.clear();
        }

        @Test
        void aCatchAllHandlerDoesNotTurnARefusalIntoAnError() throws Exception {
            UrlRulesHttpTests.get(this.port, "/api");
            HttpResponse<String> refused = UrlRulesHttpTests.get(this.port, "/api");
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.body()).contains("\"violated-policies\":[\"api\"]");
        }

        @Test
        void aBrowserRefusedByAnAnnotationGetsTheErrorPage() throws Exception {
            UrlRulesHttpTests.get(this.port, "/api");
            HttpResponse<String> page = UrlRulesHttpTests.get(this.port, "/api", "Accept", "text/html");
            assertThat(page.statusCode()).isEqualTo(429);
            assertThat(page.body()).contains("Slow down");
            assertThat(page.headers().firstValue("Retry-After")).hasValue("60");
        }

        @Test
        void crossOriginScriptsCanReadTheHeadersOfAllowedAndRefusedResponses() throws Exception {
            HttpResponse<String> allowed = UrlRulesHttpTests.get(this.port, "/api", "Origin", ORIGIN);
            assertThat(allowed.statusCode()).isEqualTo(200);
            assertThat(allowed.headers().firstValue("Access-Control-Allow-Origin"))
                    .hasValue(ORIGIN);
            assertThat(exposed(allowed)).contains("x-request-id", "retry-after", "ratelimit", "ratelimit-policy");
            HttpResponse<String> refused = UrlRulesHttpTests.get(this.port, "/api", "Origin", ORIGIN);
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.headers().firstValue("Access-Control-Allow-Origin"))
                    .hasValue(ORIGIN);
            assertThat(exposed(refused)).contains("retry-after", "ratelimit", "ratelimit-policy");
        }

        @Test
        void aRefusalByARuleIsReadableCrossOriginWhereTheOriginIsAllowed() throws Exception {
            HttpResponse<String> allowed = UrlRulesHttpTests.get(this.port, "/ruled", "Origin", ORIGIN);
            assertThat(allowed.statusCode()).isEqualTo(200);
            assertThat(exposed(allowed)).contains("retry-after", "ratelimit", "ratelimit-policy");
            HttpResponse<String> refused = UrlRulesHttpTests.get(this.port, "/ruled", "Origin", ORIGIN);
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.headers().firstValue("Access-Control-Allow-Origin"))
                    .hasValue(ORIGIN);
            assertThat(exposed(refused)).contains("x-request-id", "retry-after", "ratelimit", "ratelimit-policy");
            HttpResponse<String> stranger =
                    UrlRulesHttpTests.get(this.port, "/ruled", "Origin", "https://evil.example");
            assertThat(stranger.statusCode()).isEqualTo(429);
            assertThat(stranger.headers().firstValue("Access-Control-Allow-Origin"))
                    .as("origin not allowed")
                    .isEmpty();
        }

        private static String exposed(HttpResponse<String> response) {
            return String.join(",", response.headers().allValues("Access-Control-Expose-Headers"))
                    .toLowerCase();
        }
    }
}
