package dev.throttle.spring.security;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.spring.fleet.SharedPolicyChanges;
import dev.throttle.spring.fleet.StoredPolicyChange;
import dev.throttle.testing.jdbc.SharedPostgres;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;

/**
 * Who changed a policy is the actuator caller's principal: through a real Spring Security filter
 * chain (HTTP Basic) on a real port, stored with the change in the fleet's shared store (PostgreSQL)
 * and shown by {@code GET /actuator/throttle}; a caller who is not signed in changes nothing.
 */
class PolicyChangeAuthorHttpTests {

    private static final HttpClient http = HttpClient.newHttpClient();

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(ServletWebSecurity.class)
    static class SecuredActuator {

        @Bean
        SecurityFilterChain actuatorSecurity(HttpSecurity http) throws Exception {
            return http.authorizeHttpRequests(
                            (requests) -> requests.anyRequest().authenticated())
                    .httpBasic(Customizer.withDefaults())
                    .csrf((csrf) -> csrf.disable())
                    .build();
        }

        @Bean
        InMemoryUserDetailsManager operators() {
            return new InMemoryUserDetailsManager(User.withUsername("ops-alice")
                    .password("{noop}s3cret")
                    .roles("OPS")
                    .build());
        }
    }

    @Test
    void aChangeThroughTheActuatorIsStoredAndShownWithTheSignedInCallersName() throws Exception {
        SharedPostgres.clear();
        try (ConfigurableApplicationContext app = new SpringApplicationBuilder(SecuredActuator.class)
                .properties(
                        "server.port=0",
                        "spring.datasource.url=" + SharedPostgres.url(),
                        "throttle.store.type=jdbc",
                        "throttle.store.jdbc.timeout=3s",
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=3",
                        "throttle.policies.api.period=60s",
                        "management.endpoints.web.exposure.include=throttle",
                        "management.endpoint.throttle.access=unrestricted",
                        "spring.main.banner-mode=off")
                .run()) {
            assertThat(send(app, "POST", "{\"limit\": 5}", null).statusCode())
                    .as("not signed in")
                    .isEqualTo(401);
            assertThat(send(app, "POST", "{\"limit\": 7}", "ops-alice:s3cret").statusCode())
                    .isEqualTo(200);

            assertThat(app.getBean(SharedPolicyChanges.class).loadAll())
                    .singleElement()
                    .extracting(StoredPolicyChange::by)
                    .isEqualTo("ops-alice");
            assertThat(send(app, "GET", null, "ops-alice:s3cret").body())
                    .contains("\"changed\":{\"by\":\"ops-alice\"")
                    .contains("\"limit\":7");
        }
    }

    private static HttpResponse<String> send(
            ConfigurableApplicationContext app, String method, String json, String user) throws Exception {
        int port = Integer.parseInt(app.getEnvironment().getProperty("local.server.port"));
        String path = method.equals("GET") ? "/actuator/throttle" : "/actuator/throttle/api";
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(10));
        if (user != null) {
            request.header(
                    "Authorization",
                    "Basic " + Base64.getEncoder().encodeToString(user.getBytes(StandardCharsets.UTF_8)));
        }
        if (json != null) {
            request.header("Content-Type", "application/json")
                    .method(method, HttpRequest.BodyPublishers.ofString(json));
        } else {
            request.method(method, HttpRequest.BodyPublishers.noBody());
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }
}
