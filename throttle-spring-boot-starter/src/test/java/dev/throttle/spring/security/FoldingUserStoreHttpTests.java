package dev.throttle.spring.security;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import java.net.http.HttpResponse;
import java.text.Normalizer;
import java.time.Duration;
import java.util.Locale;
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
import org.springframework.security.core.Authentication;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetails;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.core.userdetails.UsernameNotFoundException;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * Against a user store that compares names case- and accent-insensitively (as a database collation
 * such as MySQL's {@code utf8mb4_0900_ai_ci} does), through a real port and Spring Security's real
 * filter chain: every spelling of one account is one lockout, so no spelling buys a fresh one.
 */
@SpringBootTest(
        classes = FoldingUserStoreHttpTests.FoldingUsersApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.policies.login.algorithm=lockout",
            "throttle.policies.login.timeouts=1m,10m",
            "throttle.policies.login.reset-on-success=true",
            "throttle.security.authentication.username-policy=login"
        })
class FoldingUserStoreHttpTests {

    private static final String FULLWIDTH_ALICE = "\uff41\uff4c\uff49\uff43\uff45";

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
    void theUserStoreFindsOneAccountForEverySpelling() throws Exception {
        for (String spelling : new String[] {"alice", "ALICE", FULLWIDTH_ALICE, "alic\u0065\u0301", "al\u00adice"}) {
            this.store.clear();
            assertThat(this.client.basic("/api/me", spelling, "wonderland").statusCode())
                    .as(spelling)
                    .isEqualTo(200);
        }
    }

    @Test
    void guessesAtFullwidthUpperAndLowerCaseSpellingsShareOneLockout() throws Exception {
        assertThat(this.client.basic("/api/me", FULLWIDTH_ALICE, "guess").statusCode())
                .isEqualTo(401);
        HttpResponse<String> upper = this.client.basic("/api/me", "ALICE", "guess");
        assertThat(upper.statusCode()).as("locked out by the fullwidth guess").isEqualTo(429);
        assertThat(upper.headers().firstValue("Retry-After")).hasValue("60");
        assertThat(this.client.basic("/api/me", "alice", "guess").statusCode()).isEqualTo(429);
        assertThat(this.client.formLogin("alic\u0065\u0301", "guess").statusCode())
                .as("an accent by a combining mark")
                .isEqualTo(429);
        assertThat(this.client.formLogin("al\u00adice", "guess").statusCode())
                .as("a soft hyphen")
                .isEqualTo(429);

        this.clock.advance(Duration.ofMinutes(1));
        assertThat(this.client.basic("/api/me", "Alice", "guess").statusCode()).isEqualTo(401);
        HttpResponse<String> second = this.client.basic("/api/me", FULLWIDTH_ALICE, "wonderland");
        assertThat(second.statusCode())
                .as("the lockout's second rung, whichever spelling climbed it")
                .isEqualTo(429);
        assertThat(second.headers().firstValue("Retry-After")).hasValue("600");
    }

    @Test
    void guessesWithControlCharactersAroundTheNameShareItsLockout() throws Exception {
        // HTTP Basic passes the name on as sent; the store's trim() finds alice for each of these
        assertThat(this.client.basic("/api/me", "alice\u0001", "guess").statusCode())
                .isEqualTo(401);
        for (String spelling :
                new String[] {"alice", "alice\u0001", "\u0002alice\u0002", "alice\u001b", "alice\u0000"}) {
            assertThat(this.client.basic("/api/me", spelling, "wonderland").statusCode())
                    .as("%s locked out by the first guess", spelling.replaceAll("\\p{Cc}", "^"))
                    .isEqualTo(429);
        }
        this.clock.advance(Duration.ofMinutes(1));
        assertThat(this.client.basic("/api/me", "\u0001alice", "wonderland").statusCode())
                .as("the store finds alice under this spelling")
                .isEqualTo(200);
    }

    @Test
    void aSuccessEndsTheLockoutUnderTheNamesOwnSpellingAndOnlyGivesBackItsAttemptUnderAnother() throws Exception {
        assertThat(this.client.basic("/api/me", "ALICE", "guess").statusCode()).isEqualTo(401);
        this.clock.advance(Duration.ofMinutes(1));
        HttpResponse<String> me = this.client.basic("/api/me", FULLWIDTH_ALICE, "wonderland");
        assertThat(me.statusCode()).isEqualTo(200);
        assertThat(me.body()).isEqualTo("{\"name\":\"alice\"}");
        // another spelling may be another account in a store that keeps spellings apart: it resets nothing
        assertThat(this.client.basic("/api/me", "alice", "guess").statusCode()).isEqualTo(401);
        HttpResponse<String> secondRung = this.client.basic("/api/me", "alice", "wonderland");
        assertThat(secondRung.statusCode()).isEqualTo(429);
        assertThat(secondRung.headers().firstValue("Retry-After")).hasValue("600");

        this.clock.advance(Duration.ofMinutes(10));
        assertThat(this.client.basic("/api/me", "alice", "wonderland").statusCode())
                .isEqualTo(200);
        assertThat(this.client.basic("/api/me", "alice", "guess").statusCode()).isEqualTo(401);
        HttpResponse<String> firstRung = this.client.basic("/api/me", "alice", "guess");
        assertThat(firstRung.statusCode()).isEqualTo(429);
        assertThat(firstRung.headers().firstValue("Retry-After"))
                .as("the name's own spelling ended the lockout: the first rung again")
                .hasValue("60");
    }

    /**
     * One user, alice / wonderland, in a store that folds names as a case- and accent-insensitive
     * collation does: compatibility forms, case, accents and invisible characters do not count.
     */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import({ServletWebSecurity.class, FoldingUsersApplication.Me.class})
    static class FoldingUsersApplication {

        @Bean
        ManualTimeSource manualTimeSource() {
            return new ManualTimeSource();
        }

        @Bean
        UserDetailsService users() {
            Map<String, String> passwords = Map.of("alice", "{noop}wonderland");
            return (name) -> {
                String folded = fold(name);
                String password = passwords.get(folded);
                if (password == null) {
                    throw new UsernameNotFoundException("no such user");
                }
                UserDetails user = User.withUsername(folded)
                        .password(password)
                        .roles("USER")
                        .build();
                return user;
            };
        }

        @Bean
        SecurityFilterChain securityFilterChain(HttpSecurity http) throws Exception {
            return http.authorizeHttpRequests((requests) -> requests.requestMatchers("/api/me")
                            .authenticated()
                            .anyRequest()
                            .permitAll())
                    .formLogin((form) -> form.defaultSuccessUrl("/api/me", true).failureUrl("/login?error"))
                    .httpBasic((basic) -> basic.realmName("test"))
                    .csrf((csrf) -> csrf.disable())
                    .build();
        }

        /**
         * The store's own folding, written apart from the throttle's: what a collation ignores, and
         * {@link String#trim()}, which drops control characters at either end as well as spaces.
         */
        static String fold(String name) {
            return Normalizer.normalize(name, Normalizer.Form.NFKD)
                    .replaceAll("[\\p{M}\\p{Cf}]", "")
                    .toLowerCase(Locale.ROOT)
                    .strip()
                    .trim();
        }

        @RestController
        static class Me {

            @GetMapping("/api/me")
            Map<String, String> me(Authentication user) {
                return Map.of("name", user.getName());
            }
        }
    }
}
