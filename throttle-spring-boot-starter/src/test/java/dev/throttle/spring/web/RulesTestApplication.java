package dev.throttle.spring.web;

import dev.throttle.ManualTimeSource;
import dev.throttle.spring.annotation.Throttled;
import java.util.Map;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.PropertySource;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;

/**
 * A web application whose handlers carry no annotation, for URL rules; one annotated handler
 * for the safelist; on a manual clock. Policies and rules: {@code rules-test.properties}.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(RulesTestApplication.Endpoints.class)
@PropertySource("classpath:rules-test.properties")
class RulesTestApplication {

    @Bean
    ManualTimeSource manualTimeSource() {
        return new ManualTimeSource();
    }

    @RestController
    static class Endpoints {

        @GetMapping("/api/hello")
        Map<String, String> hello() {
            return Map.of("message", "hello");
        }

        @GetMapping("/api/reports/{id}")
        Map<String, String> report(@PathVariable String id) {
            return Map.of("report", id);
        }

        @GetMapping("/open")
        Map<String, String> open() {
            return Map.of("message", "not throttled");
        }

        @GetMapping("/annotated")
        @Throttled(policy = "annotated", key = "#ip")
        Map<String, String> annotated() {
            return Map.of("message", "annotated");
        }
    }
}
