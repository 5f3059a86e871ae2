package dev.throttle.boot3;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.memory.MemoryThrottleStore;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.ModelAttribute;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * A Boot 3.5 WebFlux application on a real Netty port: the same 429 contract as Spring MVC, with the
 * problem+json body written by Boot 3.5's Jackson 2 encoder, decided before the controller's
 * {@code @ModelAttribute} method runs.
 */
@SpringBootTest(
        classes = WebFluxOnBoot35Tests.WebFluxApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.main.web-application-type=reactive",
            "throttle.policies.api.algorithm=gcra",
            "throttle.policies.api.limit=3",
            "throttle.policies.api.period=60s"
        })
@Import(ManualClock.class)
class WebFluxOnBoot35Tests {

    @LocalServerPort
    int port;

    @Autowired
    MemoryThrottleStore store;

    static final AtomicInteger lookups = new AtomicInteger();

    @BeforeEach
    void clearState() {
        this.store.clear();
        lookups.set(0);
    }

    @Test
    void aMonoHandlerGetsRateLimitHeadersWhenAllowedAndA429ProblemJsonWhenRefused() throws Exception {
        for (int remaining = 2; remaining >= 0; remaining--) {
            HttpResponse<String> allowed = Http.get(this.port, "/mono");
            assertThat(allowed.statusCode()).isEqualTo(200);
            assertThat(allowed.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=3;w=60");
            assertThat(allowed.headers().firstValue("RateLimit")).hasValue("\"api\";r=" + remaining + ";t=20");
        }
        assertThat(lookups).hasValue(3);
        HttpResponse<String> refused = Http.get(this.port, "/mono");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(lookups).as("decided before the model's lookup").hasValue(3);
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("20");
        assertThat(refused.headers().firstValue("RateLimit")).hasValue("\"api\";r=0;t=20");
        assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(Http.json(refused))
                .containsExactlyInAnyOrderEntriesOf(Map.of(
                        "type", "https://iana.org/assignments/http-problem-types#quota-exceeded",
                        "title", "Too Many Requests",
                        "status", 429,
                        "detail", "Too many requests under policy 'api'; retry after 20 seconds.",
                        "instance", "/mono",
                        "violated-policies", List.of("api")));
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(WebFluxApplication.Endpoints.class)
    static class WebFluxApplication {

        @RestController
        static class Endpoints {

            @ModelAttribute("lookup")
            int lookup() {
                return lookups.incrementAndGet();
            }

            @GetMapping("/mono")
            @dev.throttle.spring.annotation.Throttled(policy = "api", key = "#ip")
            Mono<Map<String, String>> mono() {
                return Mono.just(Map.of("message", "mono"));
            }
        }
    }
}
