package dev.throttle.boot3;

import dev.throttle.spring.annotation.Throttled;
import java.util.Map;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * A Spring MVC application on Boot 3.5 with throttled handlers, configured only through the
 * starter's auto-configuration (no component scanning: the starter's test-jar is on the classpath).
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(MvcApplication.Endpoints.class)
class MvcApplication {

    record Credentials(String email, String password) {}

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

        @PostMapping("/login")
        @Throttled(policy = "login", key = "#credentials.email.trim().toLowerCase()")
        ResponseEntity<Map<String, String>> login(@RequestBody Credentials credentials) {
            if (!"wonderland".equals(credentials.password())) {
                return ResponseEntity.status(HttpStatus.UNAUTHORIZED).body(Map.of("error", "bad credentials"));
            }
            return ResponseEntity.ok(Map.of("email", credentials.email()));
        }

        @GetMapping("/open")
        Map<String, String> open() {
            return Map.of("message", "not throttled");
        }
    }
}
