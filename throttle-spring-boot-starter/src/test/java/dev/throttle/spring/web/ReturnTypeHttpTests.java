package dev.throttle.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.annotation.Throttled;
import io.reactivex.rxjava3.core.Single;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.reactivestreams.Publisher;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ResponseStatusException;
import reactor.core.publisher.Mono;

/**
 * The lockout probe through a real Spring MVC port, for handlers whose outcome comes after they
 * return: a {@code Publisher}, an RxJava {@code Single} and a {@code ResponseEntity<Mono<T>>}. A
 * wrong password must not pass as a success (which reset-on-success would turn into a fresh
 * quota): the second attempt is refused.
 */
@SpringBootTest(
        classes = ReturnTypeHttpTests.LoginApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.policies.login.algorithm=lockout",
            "throttle.policies.login.timeouts=1s,2s,4s",
            "throttle.policies.login.reset-on-success=true"
        })
class ReturnTypeHttpTests {

    @LocalServerPort
    int port;

    @Autowired
    ManualTimeSource clock;

    @Autowired
    MemoryThrottleStore store;

    @Autowired
    Throttler throttler;

    @BeforeEach
    void clearState() {
        this.store.clear();
    }

    private HttpResponse<String> login(String path, String user, String password) throws Exception {
        return ThrottleHttpTests.client.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + path))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(
                                "{\"user\":\"" + user + "\",\"password\":\"" + password + "\"}"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"/login/publisher", "/login/single", "/login/entity"})
    void fiveWrongPasswordsDoNotPassALockoutAndASuccessResetsIt(String path) throws Exception {
        assertThat(login(path, "alice", "guess").statusCode()).isEqualTo(401);
        for (int i = 0; i < 4; i++) {
            assertThat(login(path, "alice", "guess").statusCode())
                    .as("attempt " + (i + 2))
                    .isEqualTo(429);
        }
        assertThat(this.throttler.peek("login", "alice").allowed()).isFalse();
        this.clock.advance(Duration.ofSeconds(1));
        assertThat(login(path, "alice", "secret").statusCode()).isEqualTo(200);
        assertThat(login(path, "alice", "secret").statusCode())
                .as("the success reset the lockout")
                .isEqualTo(200);
    }

    record Credentials(String user, String password) {}

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(LoginEndpoints.class)
    static class LoginApplication {

        @Bean
        ManualTimeSource manualTimeSource() {
            return new ManualTimeSource();
        }
    }

    @RestController
    static class LoginEndpoints {

        private static Map<String, String> check(Credentials credentials) {
            if (!"secret".equals(credentials.password())) {
                throw new ResponseStatusException(HttpStatus.UNAUTHORIZED, "wrong password");
            }
            return Map.of("user", credentials.user());
        }

        @PostMapping("/login/publisher")
        @Throttled(policy = "login", key = "#credentials.user")
        Publisher<Map<String, String>> publisher(@RequestBody Credentials credentials) {
            return Mono.fromCallable(() -> check(credentials));
        }

        @PostMapping("/login/single")
        @Throttled(policy = "login", key = "#credentials.user")
        Single<Map<String, String>> single(@RequestBody Credentials credentials) {
            return Single.fromCallable(() -> check(credentials));
        }

        @PostMapping("/login/entity")
        @Throttled(policy = "login", key = "#credentials.user")
        ResponseEntity<Mono<Map<String, String>>> entity(@RequestBody Credentials credentials) {
            return ResponseEntity.ok(Mono.fromCallable(() -> check(credentials)));
        }
    }
}
