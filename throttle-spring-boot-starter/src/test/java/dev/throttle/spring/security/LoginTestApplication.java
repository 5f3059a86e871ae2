package dev.throttle.spring.security;

import dev.throttle.ManualTimeSource;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.security.authentication.AuthenticationManager;
import org.springframework.security.authentication.UsernamePasswordAuthenticationToken;
import org.springframework.security.config.annotation.authentication.configuration.AuthenticationConfiguration;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.AuthenticationException;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.crypto.password.PasswordEncoder;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.security.web.authentication.www.BasicAuthenticationEntryPoint;
import org.springframework.security.web.authentication.www.BasicAuthenticationFilter;
import org.springframework.security.web.servlet.util.matcher.PathPatternRequestMatcher;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * An application that signs users in with Spring Security only: form login at {@code POST /login}
 * (success to {@code /account}, failure to {@code /login?error}), HTTP Basic on {@code /api/me},
 * and a filter of its own at {@code POST /custom-login} that authenticates through the
 * application's {@code AuthenticationManager}. One user, alice@example.com / wonderland, behind a
 * password encoder that counts its checks. Nothing in it mentions throttling: that comes from
 * {@code throttle.security.authentication} alone.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import({ServletWebSecurity.class, LoginTestApplication.Pages.class})
class LoginTestApplication {

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
    SecurityFilterChain securityFilterChain(HttpSecurity http, AuthenticationConfiguration authentication)
            throws Exception {
        http.authorizeHttpRequests((requests) -> requests.requestMatchers("/account", "/api/me")
                        .authenticated()
                        .anyRequest()
                        .permitAll())
                .formLogin((form) -> form.defaultSuccessUrl("/account", true).failureUrl("/login?error"))
                .httpBasic((basic) -> basic.realmName("test"))
                .exceptionHandling((exceptions) -> exceptions.defaultAuthenticationEntryPointFor(
                        basicEntryPoint(),
                        PathPatternRequestMatcher.withDefaults().matcher("/api/**")))
                .csrf((csrf) -> csrf.disable())
                .addFilterBefore(
                        new CustomLoginFilter(authentication.getAuthenticationManager()),
                        BasicAuthenticationFilter.class);
        return http.build();
    }

    private static BasicAuthenticationEntryPoint basicEntryPoint() {
        BasicAuthenticationEntryPoint entryPoint = new BasicAuthenticationEntryPoint();
        entryPoint.setRealmName("test");
        return entryPoint;
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

    /** Plain-text passwords, every check counted: a refused attempt must never get here. */
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

    /**
     * A login of the application's own: {@code POST /custom-login} with {@code X-Username} and
     * {@code X-Password} headers, through the AuthenticationManager; 204 or 401.
     */
    static final class CustomLoginFilter extends OncePerRequestFilter {

        private final AuthenticationManager manager;

        CustomLoginFilter(AuthenticationManager manager) {
            this.manager = manager;
        }

        @Override
        protected boolean shouldNotFilter(HttpServletRequest request) {
            return !request.getRequestURI().equals("/custom-login");
        }

        @Override
        protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
                throws ServletException, IOException {
            try {
                this.manager.authenticate(UsernamePasswordAuthenticationToken.unauthenticated(
                        request.getHeader("X-Username"), request.getHeader("X-Password")));
                response.setStatus(204);
            } catch (AuthenticationException ex) {
                response.setStatus(401);
            }
        }
    }
}
