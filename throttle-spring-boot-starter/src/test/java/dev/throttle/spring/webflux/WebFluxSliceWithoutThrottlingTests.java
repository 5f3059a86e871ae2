package dev.throttle.spring.webflux;

import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.webflux.test.autoconfigure.WebFluxTest;
import org.springframework.test.context.ContextConfiguration;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * A {@code @WebFluxTest} slice without the starter's auto-configurations imported: an application's
 * existing controller tests keep passing when it adds the starter, however often they call a
 * throttled handler.
 */
@WebFluxTest(
        properties = {
            "throttle.policies.slice.algorithm=token-bucket",
            "throttle.policies.slice.capacity=3",
            "throttle.policies.slice.refill-period=1h"
        })
@ContextConfiguration(classes = WebFluxSliceTests.SliceConfiguration.class)
class WebFluxSliceWithoutThrottlingTests {

    @Autowired
    WebTestClient client;

    @Test
    void aSliceWithoutTheStarterImportedIsNotThrottled() {
        for (int i = 0; i < 10; i++) {
            this.client.get().uri("/slice").exchange().expectStatus().isOk();
        }
    }
}
