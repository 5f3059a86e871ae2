package dev.throttle.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.annotation.Throttled;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * Spring MVC handlers whose answer comes later (a {@code CompletableFuture}, a {@code Mono}), through a
 * real port: an allowed response carries one {@code RateLimit-Policy} and one {@code RateLimit} line,
 * however many dispatches the request went through, and a refusal is a 429 with them.
 */
@SpringBootTest(
        classes = AsyncHeadersHttpTests.AsyncApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.policies.api.algorithm=gcra",
            "throttle.policies.api.limit=3",
            "throttle.policies.api.period=10m",
            // a URL rule elsewhere puts every request through the rules' filter
            "throttle.policies.elsewhere.algorithm=gcra",
            "throttle.policies.elsewhere.limit=3",
            "throttle.policies.elsewhere.period=10m",
            "throttle.http.rules[0].paths=/elsewhere/**",
            "throttle.http.rules[0].policy=elsewhere"
        })
class AsyncHeadersHttpTests {

    @LocalServerPort
    int port;

    @Autowired
    MemoryThrottleStore store;

    @BeforeEach
    void clearState() {
        this.store.clear();
    }

    private HttpResponse<String> get(String path) throws Exception {
        return ThrottleHttpTests.client.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + path))
                        .header("Accept", "application/json")
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"/future-by-ip", "/mono-by-ip", "/future-by-name?name=a", "/mono-by-name?name=a"})
    void anAllowedAnswerThatCameLaterCarriesEachHeaderOnceAndTheFourthIsRefused(String path) throws Exception {
        for (int i = 0; i < 3; i++) {
            HttpResponse<String> allowed = get(path);
            assertThat(allowed.statusCode()).as("call %d", i + 1).isEqualTo(200);
            assertThat(allowed.headers().allValues("RateLimit-Policy"))
                    .as("call %d", i + 1)
                    .containsExactly("\"api\";q=3;w=600");
            String remaining = "\"api\";r=" + (2 - i) + ";t=";
            assertThat(allowed.headers().allValues("RateLimit"))
                    .as("call %d", i + 1)
                    .singleElement()
                    .satisfies((value) -> assertThat(value).startsWith(remaining));
        }
        HttpResponse<String> refused = get(path);
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().allValues("RateLimit")).hasSize(1);
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Endpoints.class)
    static class AsyncApplication {}

    @RestController
    static class Endpoints {

        @GetMapping("/future-by-ip")
        @Throttled(policy = "api", key = "#ip")
        CompletableFuture<String> futureByIp() {
            return CompletableFuture.supplyAsync(() -> "later");
        }

        @GetMapping("/mono-by-ip")
        @Throttled(policy = "api", key = "#ip")
        Mono<String> monoByIp() {
            return Mono.just("later");
        }

        @GetMapping("/future-by-name")
        @Throttled(policy = "api", key = "#name")
        CompletableFuture<List<String>> futureByName(@RequestParam String name) {
            return CompletableFuture.supplyAsync(() -> List.of(name));
        }

        @GetMapping("/mono-by-name")
        @Throttled(policy = "api", key = "#name")
        Mono<List<String>> monoByName(@RequestParam String name) {
            return Mono.fromSupplier(() -> List.of(name));
        }
    }
}
