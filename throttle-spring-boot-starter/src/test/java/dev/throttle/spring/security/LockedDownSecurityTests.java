package dev.throttle.spring.security;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;

/**
 * An application secured as Spring Boot's default security secures one (every request
 * authenticated, form login and HTTP Basic, so the error page too): a browser refused there gets
 * problem+json, since its error page would have been a redirect to the login page.
 */
@SpringBootTest(
        classes = LockedDownSecurityTests.LockedDownApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.policies.login.algorithm=lockout",
            "throttle.policies.login.timeouts=1h",
            "throttle.security.authentication.username-policy=login"
        })
class LockedDownSecurityTests {

    @LocalServerPort
    int port;

    @Test
    void aRefusedAttemptIsA429ForApiClientsAndForABrowserThatMayNotSeeTheErrorPage() throws Exception {
        LoginClient client = new LoginClient(this.port);
        assertThat(client.basic("/", "alice@example.com", "guess").statusCode()).isEqualTo(401);
        HttpResponse<String> api = client.basic("/", "alice@example.com", "guess");
        assertThat(api.statusCode()).isEqualTo(429);
        assertThat(api.headers().firstValue("Retry-After"))
                .hasValueSatisfying(
                        (seconds) -> assertThat(Long.parseLong(seconds)).isBetween(3590L, 3600L));
        HttpResponse<String> browser = client.formLoginWithCsrf(
                "alice@example.com",
                "wonderland",
                "Accept",
                "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8");
        assertThat(browser.statusCode())
                .as(browser.headers().map() + browser.body())
                .isEqualTo(429);
        assertThat(browser.headers().firstValue("Location")).isEmpty();
        assertThat(browser.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(browser.body()).contains("\"violated-policies\":[\"login\"]");
        assertThat(browser.headers().firstValue("Retry-After"))
                .hasValueSatisfying(
                        (seconds) -> assertThat(Long.parseLong(seconds)).isBetween(3590L, 3600L));
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(ServletWebSecurity.class)
    static class LockedDownApplication {

        @Bean
        SecurityFilterChain securityFilterChain(HttpSecurity http) throws Exception {
            return http.authorizeHttpRequests(
                            (requests) -> requests.anyRequest().authenticated())
                    .formLogin(Customizer.withDefaults())
                    .httpBasic(Customizer.withDefaults())
                    .build();
        }

        @Bean
        UserDetailsService users() {
            return new InMemoryUserDetailsManager(User.withUsername("alice@example.com")
                    .password("{noop}wonderland")
                    .roles("USER")
                    .build());
        }
    }
}
