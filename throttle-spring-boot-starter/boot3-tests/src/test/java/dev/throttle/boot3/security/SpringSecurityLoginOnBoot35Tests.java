package dev.throttle.boot3.security;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import java.net.CookieManager;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.crypto.password.PasswordEncoder;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.security.web.authentication.www.BasicAuthenticationEntryPoint;
import org.springframework.security.web.servlet.util.matcher.PathPatternRequestMatcher;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code throttle.security.authentication} in a Boot 3.5 application with Spring Security 6.5,
 * through a real port: form login and HTTP Basic refused with 429 (never 401, never a redirect)
 * before the password is checked, the right password after the wait signing in, and an unknown
 * user indistinguishable from a known one.
 *
 * <p>Tagged {@code full-classpath}: runs in the Surefire execution of that name (this module's
 * pom), the only one whose class path has Spring Security's web and config modules.
 */
@Tag("full-classpath")
@SpringBootTest(
        classes = SpringSecurityLoginOnBoot35Tests.LoginApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.policies.login.algorithm=lockout",
            "throttle.policies.login.timeouts=1s,2s,4s",
            "throttle.policies.login.reset-on-success=true",
            "throttle.policies.login-ip.algorithm=token-bucket",
            "throttle.policies.login-ip.capacity=5",
            "throttle.policies.login-ip.refill-period=30s",
            "throttle.security.authentication.username-policy=login",
            "throttle.security.authentication.ip-policy=login-ip"
        })
@ExtendWith(OutputCaptureExtension.class)
class SpringSecurityLoginOnBoot35Tests {

    @LocalServerPort
    int port;

    @Autowired
    ManualTimeSource clock;

    @Autowired
    MemoryThrottleStore store;

    @Autowired
    CountingPasswordEncoder encoder;

    private final HttpClient client =
            HttpClient.newBuilder().cookieHandler(new CookieManager()).build();

    @BeforeEach
    void startClean() {
        this.store.clear();
    }

    @Test
    void formLoginIsRefusedWith429AndTheRightPasswordAfterTheWaitSignsIn(CapturedOutput output) throws Exception {
        assertThat(location(formLogin("alice@example.com", "guess"))).endsWith("/login?error");
        HttpResponse<String> refused = formLogin("alice@example.com", "guess");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Location")).isEmpty();
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(refused.headers().firstValue("RateLimit")).hasValue("\"login\";r=0;t=1");
        assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(refused.body()).contains("\"violated-policies\":[\"login\"]");

        this.clock.advance(Duration.ofSeconds(1));
        assertThat(location(formLogin(" Alice@Example.com", "wonderland"))).endsWith("/account");
        HttpResponse<String> account = get("/account");
        assertThat(account.statusCode()).isEqualTo(200);
        assertThat(account.body()).isEqualTo("Signed in as alice@example.com");
        assertThat(output.getAll()).doesNotContain("ERROR").doesNotContain("ThrottledException");
    }

    @Test
    void httpBasicIsRefusedWith429NotA401AndARefusedAttemptChecksNoPassword() throws Exception {
        assertThat(basic("alice@example.com", "guess").statusCode()).isEqualTo(401);
        int checked = this.encoder.checks.get();
        HttpResponse<String> refused = basic("alice@example.com", "wonderland");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(refused.headers().firstValue("WWW-Authenticate")).isEmpty();
        assertThat(this.encoder.checks.get()).isEqualTo(checked);

        this.clock.advance(Duration.ofSeconds(1));
        HttpResponse<String> me = basic("alice@example.com", "wonderland");
        assertThat(me.statusCode()).isEqualTo(200);
        assertThat(me.body()).isEqualTo("{\"email\":\"alice@example.com\"}");
    }

    @Test
    void anUnknownUserIsIndistinguishableFromAKnownOne() throws Exception {
        List<String> known = attempts("alice@example.com");
        this.store.clear();
        assertThat(attempts("mallory@example.com"))
                .isEqualTo(known)
                .containsExactly("302", "429 1", "401 -", "429 2", "302");
    }

    @Test
    void aFloodOfRandomUsernamesFromOneAddressIsHeldByTheAddressPolicy() throws Exception {
        for (int i = 0; i < 5; i++) {
            assertThat(basic("user" + i + "@example.com", "guess").statusCode()).isEqualTo(401);
        }
        HttpResponse<String> refused = formLogin("fresh@example.com", "guess");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.body()).contains("\"violated-policies\":[\"login-ip\"]");
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("30");
    }

    private List<String> attempts(String username) throws Exception {
        List<String> seen = new ArrayList<>();
        seen.add(describe(formLogin(username, "guess")));
        seen.add(describe(basic(username, "guess")));
        this.clock.advance(Duration.ofSeconds(1));
        seen.add(describe(basic(username, "guess")));
        seen.add(describe(formLogin(username, "guess")));
        this.clock.advance(Duration.ofSeconds(2));
        seen.add(describe(formLogin(username, "guess")));
        return seen;
    }

    private static String describe(HttpResponse<String> response) {
        return (response.statusCode() == 302)
                ? "302"
                : response.statusCode() + " "
                        + response.headers().firstValue("Retry-After").orElse("-");
    }

    private HttpResponse<String> formLogin(String username, String password) throws Exception {
        String body = "username=" + URLEncoder.encode(username, StandardCharsets.UTF_8) + "&password="
                + URLEncoder.encode(password, StandardCharsets.UTF_8);
        return this.client.send(
                request("/login")
                        .header("Content-Type", "application/x-www-form-urlencoded")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> basic(String username, String password) throws Exception {
        String credentials =
                Base64.getEncoder().encodeToString((username + ":" + password).getBytes(StandardCharsets.UTF_8));
        return this.client.send(
                request("/api/me")
                        .header("Authorization", "Basic " + credentials)
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> get(String path) throws Exception {
        return this.client.send(request(path).build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + path));
    }

    private static String location(HttpResponse<String> response) {
        assertThat(response.statusCode()).as(response.body()).isEqualTo(302);
        return response.headers().firstValue("Location").orElse("");
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(LoginApplication.Pages.class)
    static class LoginApplication {

        @Bean
        ManualTimeSource manualTimeSource() {
            return new ManualTimeSource();
        }

        @Bean
        CountingPasswordEncoder passwordEncoder() {
            return new CountingPasswordEncoder();
        }

        @Bean
        UserDetailsService users() {
            return new InMemoryUserDetailsManager(User.withUsername("alice@example.com")
                    .password("wonderland")
                    .roles("USER")
                    .build());
        }

        @Bean
        SecurityFilterChain securityFilterChain(HttpSecurity http) throws Exception {
            BasicAuthenticationEntryPoint basic = new BasicAuthenticationEntryPoint();
            basic.setRealmName("test");
            http.authorizeHttpRequests((requests) -> requests.requestMatchers("/account", "/api/me")
                            .authenticated()
                            .anyRequest()
                            .permitAll())
                    .formLogin(
                            (form) -> form.defaultSuccessUrl("/account", true).failureUrl("/login?error"))
                    .httpBasic((httpBasic) -> httpBasic.realmName("test"))
                    .exceptionHandling((exceptions) -> exceptions.defaultAuthenticationEntryPointFor(
                            basic, PathPatternRequestMatcher.withDefaults().matcher("/api/**")))
                    .csrf((csrf) -> csrf.disable());
            return http.build();
        }

        @RestController
        static class Pages {

            @GetMapping("/account")
            String account(Authentication user) {
                return "Signed in as " + user.getName();
            }

            @GetMapping("/api/me")
            Map<String, String> me(Authentication user) {
                return Map.of("email", user.getName());
            }
        }
    }

    /** Plain-text passwords, every check counted. */
    static final class CountingPasswordEncoder implements PasswordEncoder {

        final AtomicInteger checks = new AtomicInteger();

        @Override
        public String encode(CharSequence rawPassword) {
            return rawPassword.toString();
        }

        @Override
        public boolean matches(CharSequence rawPassword, String encodedPassword) {
            this.checks.incrementAndGet();
            return rawPassword.toString().equals(encodedPassword);
        }
    }
}
