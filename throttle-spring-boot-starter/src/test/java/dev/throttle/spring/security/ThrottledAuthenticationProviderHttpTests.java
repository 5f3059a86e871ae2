package dev.throttle.spring.security;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.annotation.Throttled;
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
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.security.authentication.AuthenticationProvider;
import org.springframework.security.authentication.dao.DaoAuthenticationProvider;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.stereotype.Component;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * A servlet application that throttles its own {@code AuthenticationProvider} with {@code @Throttled}
 * (without {@code throttle.security.authentication}): the refusal, thrown inside Spring Security's
 * filter chain, is a 429 with {@code Retry-After} and problem+json, through a real Tomcat port, not
 * the container's 500.
 */
@SpringBootTest(
        classes = ThrottledAuthenticationProviderHttpTests.SecuredApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.policies.login.algorithm=lockout",
            "throttle.policies.login.timeouts=5s,10s",
            "throttle.policies.login.reset-on-success=true"
        })
class ThrottledAuthenticationProviderHttpTests {

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

    private HttpResponse<String> me(String user, String password) throws Exception {
        String basic = Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
        return client.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + "/me"))
                        .header("Authorization", "Basic " + basic)
                        .header("Accept", "application/json")
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aRefusalThrownInsideSpringSecuritysFilterIsA429AndASuccessResetsTheLockout() throws Exception {
        assertThat(me("alice", "guess").statusCode()).isEqualTo(401);
        for (int i = 0; i < 3; i++) {
            HttpResponse<String> refused = me("alice", "guess");
            assertThat(refused.statusCode()).as("attempt " + (i + 2)).isEqualTo(429);
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("5");
            assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        }
        this.clock.advance(Duration.ofSeconds(5));
        assertThat(me("alice", "wonderland").statusCode()).isEqualTo(200);
        assertThat(me("alice", "wonderland").statusCode())
                .as("the success reset the lockout")
                .isEqualTo(200);
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import({ServletWebSecurity.class, Me.class, ThrottledPasswords.class})
    static class SecuredApplication {

        @Bean
        ManualTimeSource manualTimeSource() {
            return new ManualTimeSource();
        }

        @Bean
        // the provider bean is the only provider of Spring Security's global authentication manager
        SecurityFilterChain securityFilterChain(HttpSecurity http) throws Exception {
            return http.authorizeHttpRequests(
                            (requests) -> requests.anyRequest().authenticated())
                    .httpBasic((basic) -> {})
                    .csrf((csrf) -> csrf.disable())
                    .build();
        }
    }

    /** The application's own provider, throttled per username. */
    @Component
    static class ThrottledPasswords implements AuthenticationProvider {

        private final DaoAuthenticationProvider passwords =
                new DaoAuthenticationProvider(new InMemoryUserDetailsManager(User.withUsername("alice")
                        .password("{noop}wonderland")
                        .roles("USER")
                        .build()));

        @Override
        @Throttled(policy = "login", key = "#authentication.name")
        public Authentication authenticate(Authentication authentication) {
            return this.passwords.authenticate(authentication);
        }

        @Override
        public boolean supports(Class<?> authentication) {
            return this.passwords.supports(authentication);
        }
    }

    @RestController
    static class Me {

        @GetMapping("/me")
        String me(Authentication user) {
            return user.getName();
        }
    }
}
