package dev.throttle.spring.webflux;

import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleWebFluxAutoConfiguration;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.webflux.test.autoconfigure.WebFluxTest;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.test.context.ContextConfiguration;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * A {@code @WebFluxTest} slice that tests a refusal, written as docs/concepts.md says: a slice
 * leaves the starter out (see {@link WebFluxSliceWithoutThrottlingTests}), and importing its two
 * auto-configurations brings throttling in, the annotation and the 429 alike.
 */
@WebFluxTest(
        properties = {
            "throttle.policies.slice.algorithm=token-bucket",
            "throttle.policies.slice.capacity=3",
            "throttle.policies.slice.refill-period=1h"
        })
@ContextConfiguration(classes = WebFluxSliceTests.SliceConfiguration.class)
@ImportAutoConfiguration({ThrottleAutoConfiguration.class, ThrottleWebFluxAutoConfiguration.class})
class WebFluxSliceTests {

    @Autowired
    WebTestClient client;

    @Test
    void theFourthCallOfTheSliceIsRefusedWithTheStarterImported() {
        for (int i = 0; i < 3; i++) {
            this.client.get().uri("/slice").exchange().expectStatus().isOk();
        }
        this.client
                .get()
                .uri("/slice")
                .exchange()
                .expectStatus()
                .isEqualTo(HttpStatus.TOO_MANY_REQUESTS)
                .expectHeader()
                .valueEquals("Retry-After", "3600")
                .expectBody()
                .jsonPath("$.violated-policies[0]")
                .isEqualTo("slice");
    }

    @Configuration(proxyBeanMethods = false)
    @Import(SliceController.class)
    static class SliceConfiguration {}

    @RestController
    static class SliceController {

        @GetMapping("/slice")
        @Throttled(policy = "slice", key = "#ip")
        Mono<String> slice() {
            return Mono.just("ok");
        }
    }
}
