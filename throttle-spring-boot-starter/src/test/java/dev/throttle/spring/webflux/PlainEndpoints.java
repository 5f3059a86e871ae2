package dev.throttle.spring.webflux;

import dev.throttle.spring.annotation.Throttled;
import java.util.Map;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * A handler returning a plain value: allowed in WebFlux only with a non-blocking (memory) store.
 */
@RestController
class PlainEndpoints {

    @GetMapping("/plain")
    @Throttled(policy = "api", key = "'plain'")
    Map<String, String> plain() {
        return Map.of("message", "plain");
    }
}
