package dev.throttle.spring.webflux;

import dev.throttle.ManualTimeSource;
import dev.throttle.spring.annotation.Throttled;
import java.util.Map;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A WebFlux application with throttled handlers returning Mono, Flux and a plain value.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(WebFluxTestApplication.Endpoints.class)
public class WebFluxTestApplication {

    @Bean
    ManualTimeSource manualTimeSource() {
        return new ManualTimeSource();
    }

    record Credentials(String user, String password) {}

    @RestController
    static class Endpoints {

        @GetMapping("/mono")
        @Throttled(policy = "api", key = "#ip")
        Mono<Map<String, String>> mono() {
            return Mono.just(Map.of("message", "mono"));
        }

        @GetMapping("/flux")
        @Throttled(policy = "api", key = "#ip")
        Flux<String> flux() {
            return Flux.just("a", "b", "c");
        }

        @PostMapping("/login")
        @Throttled(policy = "login", key = "#credentials.user")
        Mono<ResponseEntity<Map<String, String>>> login(@RequestBody Credentials credentials) {
            if (!"secret".equals(credentials.password())) {
                return Mono.just(
                        ResponseEntity.status(HttpStatus.UNAUTHORIZED).body(Map.of("error", "wrong password")));
            }
            return Mono.just(ResponseEntity.ok(Map.of("user", credentials.user())));
        }
    }
}
