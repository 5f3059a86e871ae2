package dev.throttle.spring.security;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleWebFluxAutoConfiguration;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.security.authentication.ReactiveAuthenticationManager;
import org.springframework.security.authentication.UserDetailsRepositoryReactiveAuthenticationManager;
import org.springframework.security.config.annotation.web.reactive.EnableWebFluxSecurity;
import org.springframework.security.config.web.server.ServerHttpSecurity;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.userdetails.MapReactiveUserDetailsService;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.web.server.SecurityWebFilterChain;
import org.springframework.stereotype.Component;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * Spring Security logins in a WebFlux application, through a real Netty port and Spring Security's
 * own filter chain: the reactive way is {@code @Throttled} on the application's
 * {@code ReactiveAuthenticationManager}, whose refusal, thrown inside Spring Security's web filter,
 * is a 429 with {@code Retry-After} (it was Spring Boot's 500). The servlet-only properties stop the
 * start of a WebFlux application instead of throttling nothing.
 */
@SpringBootTest(
        classes = WebFluxSecurityLoginHttpTests.SecuredApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.main.web-application-type=reactive",
            "throttle.policies.login.algorithm=lockout",
            "throttle.policies.login.timeouts=5s,10s",
            "throttle.policies.login.reset-on-success=true"
        })
class WebFluxSecurityLoginHttpTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    @LocalServerPort
    int port;

    @Autowired
    ManualTimeSource clock;

    @Autowired
    MemoryThrottleStore store;

    @BeforeEach
    void clearState() {
        this.store.clear();
    }

    private HttpResponse<String> hello(String user, String password) throws Exception {
        String basic = Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
        return client.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + "/hello"))
                        .header("Authorization", "Basic " + basic)
                        .header("Accept", "application/json")
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aLockedOutLoginIsAnsweredWithA429ThroughSpringSecuritysFilterAndASuccessResetsIt() throws Exception {
        assertThat(hello("alice", "guess").statusCode()).isEqualTo(401);
        for (int i = 0; i < 3; i++) {
            HttpResponse<String> refused = hello("alice", "guess");
            assertThat(refused.statusCode()).as("attempt " + (i + 2)).isEqualTo(429);
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("5");
            assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        }
        assertThat(hello("alice", "wonderland").statusCode())
                .as("the right password is refused too while locked out")
                .isEqualTo(429);
        this.clock.advance(Duration.ofSeconds(5));
        assertThat(hello("alice", "wonderland").statusCode()).isEqualTo(200);
        assertThat(hello("alice", "wonderland").statusCode())
                .as("the success reset the lockout")
                .isEqualTo(200);
    }

    @Test
    void theServletLoginPropertiesStopTheStartOfAWebFluxApplication() {
        new ReactiveWebApplicationContextRunner()
                .withConfiguration(
                        AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleWebFluxAutoConfiguration.class))
                .withPropertyValues(
                        "throttle.policies.login.algorithm=lockout",
                        "throttle.policies.login.timeouts=1s",
                        "throttle.security.authentication.username-policy=login")
                .run((context) -> {
                    assertThat(context).hasFailed();
                    Throwable failure = context.getStartupFailure();
                    while (!(failure instanceof ThrottleConfigurationException) && failure.getCause() != null) {
                        failure = failure.getCause();
                    }
                    assertThat(failure)
                            .isInstanceOf(ThrottleConfigurationException.class)
                            .hasMessageStartingWith("throttle.security.authentication.username-policy throttles"
                                    + " Spring Security logins in servlet applications only");
                });
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @EnableWebFluxSecurity
    @Import({Hello.class, ThrottledLogins.class})
    static class SecuredApplication {

        @Bean
        ManualTimeSource manualTimeSource() {
            return new ManualTimeSource();
        }

        @Bean
        SecurityWebFilterChain securityWebFilterChain(ServerHttpSecurity http) {
            return http.authorizeExchange((exchanges) -> exchanges.anyExchange().authenticated())
                    .httpBasic((basic) -> {})
                    .csrf(ServerHttpSecurity.CsrfSpec::disable)
                    .build();
        }
    }

    /** The application's authentication manager, throttled per username. */
    @Component
    static class ThrottledLogins implements ReactiveAuthenticationManager {

        private final ReactiveAuthenticationManager passwords = new UserDetailsRepositoryReactiveAuthenticationManager(
                new MapReactiveUserDetailsService(User.withUsername("alice")
                        .password("{noop}wonderland")
                        .roles("USER")
                        .build()));

        @Override
        @Throttled(policy = "login", key = "#authentication.name")
        public Mono<Authentication> authenticate(Authentication authentication) {
            return this.passwords.authenticate(authentication);
        }
    }

    @RestController
    static class Hello {

        @GetMapping("/hello")
        Mono<String> hello() {
            return Mono.just("hello");
        }
    }
}
