package dev.throttle.sample;

import java.util.Map;
import java.util.stream.Collectors;
import org.springframework.boot.security.autoconfigure.actuate.web.servlet.EndpointRequest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.PropertySource;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.core.userdetails.UsernameNotFoundException;
import org.springframework.security.crypto.factory.PasswordEncoderFactories;
import org.springframework.security.crypto.password.PasswordEncoder;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.security.web.authentication.www.BasicAuthenticationEntryPoint;
import org.springframework.security.web.servlet.util.matcher.PathPatternRequestMatcher;
import org.springframework.security.web.util.matcher.RequestMatcher;

/**
 * Spring Security's sign-in for the demo users: form login ({@code GET /login} renders the form
 * with its CSRF token, {@code POST /login} signs in and goes on to {@code /account}, or back to
 * {@code /login?error}) and HTTP Basic for {@code GET /api/me}. Everything else stays as public as
 * it was without Spring Security, and the JSON API and the actuator take no CSRF token, as before.
 *
 * <p>Both sign-ins are throttled by the starter, from properties alone:
 * {@code throttle.security.authentication} names the {@code login} and {@code login-ip} policies
 * that {@code POST /api/login} uses, so a lockout earned one way holds the other ways too. In
 * code, with those two properties from {@code login-throttling.properties} beside it, so that they
 * hold whatever configuration file the app is started with; only the policies' numbers come from
 * YAML.
 */
@Configuration(proxyBeanMethods = false)
@PropertySource("classpath:login-throttling.properties")
class SecurityConfiguration {

    @Bean
    SecurityFilterChain securityFilterChain(HttpSecurity http) throws Exception {
        RequestMatcher api = PathPatternRequestMatcher.withDefaults().matcher("/api/**");
        http.authorizeHttpRequests((requests) -> requests.requestMatchers("/account", "/api/me")
                        .authenticated()
                        .anyRequest()
                        .permitAll())
                .formLogin((form) -> form.defaultSuccessUrl("/account", true).failureUrl("/login?error"))
                .httpBasic((basic) -> basic.realmName("throttle-sample"))
                // an API client without credentials is asked for Basic; a browser is sent to the login page
                .exceptionHandling(
                        (exceptions) -> exceptions.defaultAuthenticationEntryPointFor(basicEntryPoint(), api))
                .csrf((csrf) -> csrf.ignoringRequestMatchers(api, EndpointRequest.toAnyEndpoint()));
        return http.build();
    }

    /**
     * The demo users, each password hashed once at startup (bcrypt): each sign-in that reaches the
     * password check costs a hash, and a refused one never gets there.
     */
    @Bean
    UserDetailsService demoUserDetails(DemoUsers users, PasswordEncoder passwordEncoder) {
        Map<String, String> hashed = users.passwords().entrySet().stream()
                .collect(Collectors.toUnmodifiableMap(
                        Map.Entry::getKey, (user) -> passwordEncoder.encode(user.getValue())));
        return (username) -> {
            String email = DemoUsers.normalize(username);
            String password = hashed.get(email);
            if (password == null) {
                throw new UsernameNotFoundException("No such user");
            }
            return User.withUsername(email).password(password).roles("USER").build();
        };
    }

    @Bean
    PasswordEncoder passwordEncoder() {
        return PasswordEncoderFactories.createDelegatingPasswordEncoder();
    }

    private static BasicAuthenticationEntryPoint basicEntryPoint() {
        BasicAuthenticationEntryPoint entryPoint = new BasicAuthenticationEntryPoint();
        entryPoint.setRealmName("throttle-sample");
        return entryPoint;
    }
}
