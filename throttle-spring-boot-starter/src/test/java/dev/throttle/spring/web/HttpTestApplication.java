package dev.throttle.spring.web;

import dev.throttle.ManualTimeSource;
import dev.throttle.spring.annotation.Throttled;
import java.util.Map;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * A small web application for HTTP tests: GCRA per client address on /api, plus an unthrottled
 * endpoint, on a manual clock.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(HttpTestApplication.Endpoints.class)
class HttpTestApplication {

    @Bean
    ManualTimeSource manualTimeSource() {
        return new ManualTimeSource();
    }

    @RestController
    static class Endpoints {

        @GetMapping("/api")
        @Throttled(policy = "api", key = "#ip")
        Map<String, String> api() {
            return Map.of("message", "ok");
        }

        @GetMapping("/per-user")
        @Throttled(policy = "api", key = "#user")
        @Throttled(policy = "burst", key = "#ip")
        Map<String, String> perUser(@RequestParam String user) {
            return Map.of("user", user);
        }

        @GetMapping("/whoami")
        @Throttled(policy = "api", key = "#principal")
        Map<String, String> whoami(java.security.Principal principal) {
            return Map.of("user", principal.getName());
        }

        @GetMapping("/mono")
        @Throttled(policy = "api", key = "#ip")
        Mono<Map<String, String>> mono() {
            return Mono.just(Map.of("message", "ok"));
        }

        @GetMapping("/noted")
        @Throttled(policy = "burst", key = "#note")
        @Throttled(policy = "api", key = "#ip")
        Map<String, String> noted(@RequestParam String note, @RequestParam String ip) {
            return Map.of("note", note);
        }

        @GetMapping("/prefix")
        @Throttled(policy = "api", key = "#email.substring(0, 5)")
        Map<String, String> prefix(@RequestParam String email) {
            return Map.of("email", email);
        }

        @GetMapping("/open")
        Map<String, String> open() {
            return Map.of("message", "not throttled");
        }
    }
}
