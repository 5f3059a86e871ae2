package dev.throttle.boot3;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.spring.annotation.Throttled;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import reactor.core.publisher.Mono;

/**
 * URL rules, the safelist and the blocklist on Boot 3.5 (Spring Framework 6.2, Servlet 6.0),
 * through real Tomcat and Netty ports: a rule charges every spelling of its path and refuses with
 * 429 and its headers, a blocked address gets 403, a safelisted one is throttled neither by rules
 * nor by annotations, a browser gets the error page, the application's own handler wins.
 */
class UrlRulesOnBoot35Tests {

    private static final HttpClient client = HttpClient.newHttpClient();

    static HttpResponse<String> get(int port, String path, String... headers) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(30));
        if (headers.length > 0) {
            request.headers(headers);
        }
        return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    @RestController
    static class MvcEndpoints {

        @GetMapping("/api/hello")
        Map<String, String> hello() {
            return Map.of("message", "hello");
        }

        @GetMapping("/annotated")
        @Throttled(policy = "annotated", key = "#ip")
        Map<String, String> annotated() {
            return Map.of("message", "annotated");
        }
    }

    @RestControllerAdvice
    static class OwnRefusalAdvice {

        @ExceptionHandler(ThrottledException.class)
        ResponseEntity<Map<String, Object>> refused(ThrottledException ex) {
            return ResponseEntity.status(HttpStatus.TOO_MANY_REQUESTS).body(Map.of("mine", true));
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import({MvcEndpoints.class, ManualClock.class})
    static class Mvc {}

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import({MvcEndpoints.class, OwnRefusalAdvice.class, ManualClock.class})
    static class MvcWithOwnAdvice {}

    @RestController
    static class FluxEndpoints {

        @GetMapping("/api/hello")
        Mono<Map<String, String>> hello() {
            return Mono.just(Map.of("message", "hello"));
        }

        @GetMapping("/annotated")
        @Throttled(policy = "annotated", key = "#ip")
        Mono<Map<String, String>> annotated() {
            return Mono.just(Map.of("message", "annotated"));
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import({FluxEndpoints.class, ManualClock.class})
    static class Flux {}

    static void aRuleRefusesEverySpellingWith429AndItsHeaders(int port) throws Exception {
        for (int remaining = 1; remaining >= 0; remaining--) {
            HttpResponse<String> allowed = get(port, "/api/hello");
            assertThat(allowed.statusCode()).isEqualTo(200);
            assertThat(allowed.headers().firstValue("RateLimit")).hasValue("\"api\";r=" + remaining + ";t=30");
        }
        for (String path :
                new String[] {"/api/hello", "/api/hello/", "/API/hello", "/api/hello;jsessionid=1", "//api/hello"}) {
            HttpResponse<String> refused = get(port, path);
            assertThat(refused.statusCode()).as(path).isEqualTo(429);
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("30");
            assertThat(refused.headers().firstValue("Content-Type"))
                    .hasValueSatisfying((type) -> assertThat(type).startsWith("application/problem+json"));
        }
        HttpResponse<String> page = get(port, "/api/hello", "Accept", "text/html,application/xhtml+xml,*/*;q=0.8");
        assertThat(page.statusCode()).isEqualTo(429);
        assertThat(page.headers().firstValue("Content-Type"))
                .hasValueSatisfying((type) -> assertThat(type).startsWith("text/html"));
        assertThat(page.headers().firstValue("Retry-After")).hasValue("30");
    }

    @Nested
    @SpringBootTest(
            classes = Mvc.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=2",
                "throttle.policies.api.period=60s",
                "throttle.policies.annotated.algorithm=gcra",
                "throttle.policies.annotated.limit=1",
                "throttle.policies.annotated.period=60s",
                "throttle.http.rules[0].paths=/api/hello",
                "throttle.http.rules[0].policy=api",
                "throttle.http.rules[0].key=#ip"
            })
    class MvcRules {

        @LocalServerPort
        int port;

        @Test
        void aRuleRefusesEverySpellingOfItsPath() throws Exception {
            aRuleRefusesEverySpellingWith429AndItsHeaders(this.port);
        }
    }

    @Nested
    @SpringBootTest(
            classes = MvcWithOwnAdvice.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=2",
                "throttle.policies.api.period=60s",
                "throttle.policies.annotated.algorithm=gcra",
                "throttle.policies.annotated.limit=1",
                "throttle.policies.annotated.period=60s",
                "throttle.http.blocklist=203.0.113.0/24, 2001:db8::/32",
                "throttle.http.safelist=127.0.0.1/32"
            })
    class MvcSafelistAndOwnAdvice {

        @LocalServerPort
        int port;

        @Autowired
        Throttler throttler;

        @Test
        void aSafelistedAddressIsNotThrottledByAnnotations() throws Exception {
            for (int i = 0; i < 3; i++) {
                assertThat(get(this.port, "/annotated").statusCode()).isEqualTo(200);
            }
            assertThat(this.throttler.peek("annotated", "127.0.0.1").remaining())
                    .isEqualTo(1);
        }
    }

    @Nested
    @SpringBootTest(
            classes = MvcWithOwnAdvice.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=2",
                "throttle.policies.api.period=60s",
                "throttle.policies.annotated.algorithm=gcra",
                "throttle.policies.annotated.limit=1",
                "throttle.policies.annotated.period=60s"
            })
    class MvcOwnAdvice {

        @LocalServerPort
        int port;

        @Test
        void theApplicationsOwnHandlerWinsAndTheHeadersAreKept() throws Exception {
            assertThat(get(this.port, "/annotated").statusCode()).isEqualTo(200);
            HttpResponse<String> refused = get(this.port, "/annotated");
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.body()).contains("\"mine\":true");
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("60");
            assertThat(refused.headers().firstValue("RateLimit")).hasValue("\"annotated\";r=0;t=60");
        }
    }

    @Nested
    @SpringBootTest(
            classes = Mvc.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=2",
                "throttle.policies.api.period=60s",
                "throttle.policies.annotated.algorithm=gcra",
                "throttle.policies.annotated.limit=1",
                "throttle.policies.annotated.period=60s",
                "throttle.http.blocklist=127.0.0.0/8"
            })
    class MvcBlocklist {

        @LocalServerPort
        int port;

        @Test
        void aBlockedAddressGets403OnEveryRequest() throws Exception {
            for (String path : new String[] {"/api/hello", "/annotated", "/nowhere"}) {
                HttpResponse<String> response = get(this.port, path);
                assertThat(response.statusCode()).as(path).isEqualTo(403);
                assertThat(response.body()).contains("\"status\":403");
            }
        }
    }

    @Nested
    @SpringBootTest(
            classes = Flux.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "spring.main.web-application-type=reactive", "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=2", "throttle.policies.api.period=60s",
                "throttle.policies.annotated.algorithm=gcra", "throttle.policies.annotated.limit=1",
                "throttle.policies.annotated.period=60s", "throttle.http.rules[0].paths=/api/hello",
                "throttle.http.rules[0].policy=api", "throttle.http.rules[0].key=#ip"
            })
    class WebFluxRules {

        @LocalServerPort
        int port;

        @Test
        void aRuleRefusesEverySpellingOfItsPath() throws Exception {
            aRuleRefusesEverySpellingWith429AndItsHeaders(this.port);
        }

        @Test
        void aBrowserRefusedByAnAnnotationGetsTheErrorPage() throws Exception {
            assertThat(get(this.port, "/annotated").statusCode()).isEqualTo(200);
            HttpResponse<String> page =
                    get(this.port, "/annotated", "Accept", "text/html,application/xhtml+xml,*/*;q=0.8");
            assertThat(page.statusCode()).isEqualTo(429);
            assertThat(page.headers().firstValue("Content-Type"))
                    .hasValueSatisfying((type) -> assertThat(type).startsWith("text/html"));
            assertThat(page.headers().firstValue("Retry-After")).hasValue("60");
        }
    }

    @Nested
    @SpringBootTest(
            classes = Flux.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "spring.main.web-application-type=reactive", "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=2", "throttle.policies.api.period=60s",
                "throttle.policies.annotated.algorithm=gcra", "throttle.policies.annotated.limit=1",
                "throttle.policies.annotated.period=60s", "throttle.http.blocklist=127.0.0.0/8"
            })
    class WebFluxBlocklist {

        @LocalServerPort
        int port;

        @Test
        void aBlockedAddressGets403OnEveryRequest() throws Exception {
            for (String path : new String[] {"/api/hello", "/annotated", "/nowhere"}) {
                assertThat(get(this.port, path).statusCode()).as(path).isEqualTo(403);
            }
        }
    }

    @Nested
    @SpringBootTest(
            classes = Flux.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "spring.main.web-application-type=reactive", "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=2", "throttle.policies.api.period=60s",
                "throttle.policies.annotated.algorithm=gcra", "throttle.policies.annotated.limit=1",
                "throttle.policies.annotated.period=60s", "throttle.http.rules[0].paths=/api/hello",
                "throttle.http.rules[0].policy=api", "throttle.http.rules[0].key=#ip",
                "throttle.http.safelist=127.0.0.1/32"
            })
    class WebFluxSafelist {

        @LocalServerPort
        int port;

        @Test
        void aSafelistedAddressIsThrottledNeitherByRulesNorByAnnotations() throws Exception {
            for (int i = 0; i < 4; i++) {
                assertThat(get(this.port, "/api/hello").statusCode()).isEqualTo(200);
                assertThat(get(this.port, "/annotated").statusCode()).isEqualTo(200);
            }
        }
    }
}
