package dev.throttle.spring.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.annotation.Throttled;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.util.Base64;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.reactive.EnableWebFluxSecurity;
import org.springframework.security.config.web.server.ServerHttpSecurity;
import org.springframework.security.core.userdetails.MapReactiveUserDetailsService;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.web.server.SecurityWebFilterChain;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.ModelAttribute;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * {@code #principal} in a WebFlux application signed in by Spring Security's own filter chain
 * (HTTP Basic), through a real Netty port: the handler is decided by the signed-in user's name
 * before its {@code @ModelAttribute} method runs, and one user's refusal leaves another's calls alone.
 */
@SpringBootTest(
        classes = WebFluxSecurityEarlyDecisionTests.App.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.main.web-application-type=reactive",
            "throttle.policies.per-user.algorithm=gcra",
            "throttle.policies.per-user.limit=2",
            "throttle.policies.per-user.period=60s"
        })
class WebFluxSecurityEarlyDecisionTests {

    static final AtomicInteger lookups = new AtomicInteger();

    @LocalServerPort
    int port;

    @Autowired
    MemoryThrottleStore store;

    @Autowired
    Throttler throttler;

    @BeforeEach
    void clearState() {
        this.store.clear();
        lookups.set(0);
    }

    private HttpResponse<String> me(String user, String password) throws Exception {
        String credentials =
                Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
        return WebFluxUrlRulesTests.get(this.port, "/me", "Authorization", "Basic " + credentials);
    }

    @Test
    void aSignedInUserIsDecidedByTheirNameBeforeTheModelIsBuilt() throws Exception {
        assertThat(me("alice", "wonderland").body()).isEqualTo("alice");
        assertThat(me("alice", "wonderland").statusCode()).isEqualTo(200);
        HttpResponse<String> refused = me("alice", "wonderland");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Retry-After")).isPresent();
        assertThat(lookups).as("no lookup for the refused request").hasValue(2);
        assertThat(this.throttler.peek("per-user", "alice").allowed()).isFalse();

        HttpResponse<String> bob = me("bob", "builder");
        assertThat(bob.statusCode()).isEqualTo(200);
        assertThat(bob.headers().allValues("RateLimit")).containsExactly("\"per-user\";r=1;t=30");
        assertThat(lookups).hasValue(3);
    }

    @Test
    void aRequestSpringSecurityTurnsAwayIsNotCharged() throws Exception {
        assertThat(me("alice", "wrong").statusCode()).isEqualTo(401);
        assertThat(this.throttler.peek("per-user", "alice").remaining()).isEqualTo(2);
        assertThat(lookups).hasValue(0);
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @EnableWebFluxSecurity
    @Import(Me.class)
    static class App {

        @Bean
        ManualTimeSource manualTimeSource() {
            return new ManualTimeSource();
        }

        @Bean
        MapReactiveUserDetailsService users() {
            return new MapReactiveUserDetailsService(
                    User.withUsername("alice")
                            .password("{noop}wonderland")
                            .roles("USER")
                            .build(),
                    User.withUsername("bob")
                            .password("{noop}builder")
                            .roles("USER")
                            .build());
        }

        @Bean
        SecurityWebFilterChain securityWebFilterChain(ServerHttpSecurity http) {
            return http.authorizeExchange((exchanges) -> exchanges.anyExchange().authenticated())
                    .httpBasic(Customizer.withDefaults())
                    .csrf(ServerHttpSecurity.CsrfSpec::disable)
                    .build();
        }
    }

    @RestController
    static class Me {

        @ModelAttribute("lookup")
        int lookup() {
            return lookups.incrementAndGet();
        }

        @GetMapping("/me")
        @Throttled(policy = "per-user", key = "#principal")
        Mono<String> me(Principal principal) {
            return Mono.just(principal.getName());
        }
    }
}
