package dev.throttle.spring.security;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
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
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.core.userdetails.UsernameNotFoundException;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * Against a user store that keeps spellings apart (names compared exactly, as PostgreSQL's default
 * collation does), where an attacker owns "alicé" beside the victim "alice": both share one lockout
 * key, and the attacker's own successful logins must not reset what the guesses at alice earned.
 */
@SpringBootTest(
        classes = TwinAccountsHttpTests.TwinUsersApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.policies.login.algorithm=lockout",
            "throttle.policies.login.timeouts=1m,10m",
            "throttle.policies.login.reset-on-success=true",
            "throttle.security.authentication.username-policy=login"
        })
class TwinAccountsHttpTests {

    @LocalServerPort
    int port;

    @Autowired
    MemoryThrottleStore store;

    @Autowired
    ManualTimeSource clock;

    LoginClient client;

    @BeforeEach
    void startClean() {
        this.store.clear();
        this.client = new LoginClient(this.port);
    }

    @Test
    void aTwinAccountsSuccessDoesNotResetTheLockoutItsGuessesAtTheVictimEarned() throws Exception {
        assertThat(this.client.basic("/api/me", "alice", "guess-1").statusCode())
                .isEqualTo(401);
        this.clock.advance(Duration.ofMinutes(1));
        assertThat(this.client.basic("/api/me", "alic\u00e9", "evil").statusCode())
                .as("the attacker's own account")
                .isEqualTo(200);
        assertThat(this.client.basic("/api/me", "alice", "guess-2").statusCode())
                .isEqualTo(401);
        HttpResponse<String> third = this.client.basic("/api/me", "alice", "guess-3");
        assertThat(third.statusCode()).isEqualTo(429);
        assertThat(third.headers().firstValue("Retry-After"))
                .as("the second rung: the twin's success reset nothing")
                .hasValue("600");
    }

    @Test
    void theTwinsOwnSuccessesDoNotClimbTheLockout() throws Exception {
        for (int i = 0; i < 3; i++) {
            assertThat(this.client.basic("/api/me", "alic\u00e9", "evil").statusCode())
                    .as("login %d", i + 1)
                    .isEqualTo(200);
        }
    }

    /** alice / wonderland and alicé / evil, names compared exactly. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import({ServletWebSecurity.class, TwinUsersApplication.Me.class})
    static class TwinUsersApplication {

        @Bean
        ManualTimeSource manualTimeSource() {
            return new ManualTimeSource();
        }

        @Bean
        UserDetailsService users() {
            Map<String, String> passwords = Map.of("alice", "{noop}wonderland", "alic\u00e9", "{noop}evil");
            return (name) -> {
                String password = passwords.get(name);
                if (password == null) {
                    throw new UsernameNotFoundException("no such user");
                }
                return User.withUsername(name).password(password).roles("USER").build();
            };
        }

        @Bean
        SecurityFilterChain securityFilterChain(HttpSecurity http) throws Exception {
            return http.authorizeHttpRequests((requests) -> requests.requestMatchers("/api/me")
                            .authenticated()
                            .anyRequest()
                            .permitAll())
                    .httpBasic((basic) -> basic.realmName("test"))
                    .csrf((csrf) -> csrf.disable())
                    .build();
        }

        @RestController
        static class Me {

            @GetMapping("/api/me")
            Map<String, String> me(org.springframework.security.core.Authentication user) {
                return Map.of("name", user.getName());
            }
        }
    }
}
