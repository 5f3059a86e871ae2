package dev.throttle.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.annotation.Throttled;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.web.ErrorResponse;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;

/**
 * Logins that answer a wrong password without throwing and without a {@code ResponseEntity}, through
 * a real Spring MVC port: a {@code ProblemDetail} or an {@code ErrorResponse} returned with 401, a
 * handler that returns nothing after {@code response.sendError(401)}, one that sets the status and
 * returns a body. Each is a failure: it neither resets the lockout nor gets back what it took.
 */
@SpringBootTest(
        classes = ErrorAnswerHttpTests.LoginApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.policies.login.algorithm=lockout",
            "throttle.policies.login.timeouts=1s,2s,4s",
            "throttle.policies.login.reset-on-success=true",
            "throttle.policies.failures.algorithm=fixed-window",
            "throttle.policies.failures.limit=3",
            "throttle.policies.failures.window=1h",
            "throttle.policies.failures.count=failures"
        })
class ErrorAnswerHttpTests {

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

    private HttpResponse<String> post(String path, String user, String password) throws Exception {
        return ThrottleHttpTests.client.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + path))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(
                                "{\"user\":\"" + user + "\",\"password\":\"" + password + "\"}"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "/login/problem",
                "/login/error-response",
                "/login/send-error",
                "/login/set-status",
                "/login/send-error-by-ip",
                "/login/status-then-future"
            })
    void aWrongPasswordAnsweredWithAnErrorStatusDoesNotResetTheLockout(String path) throws Exception {
        assertThat(post(path, "alice", "guess").statusCode()).isEqualTo(401);
        for (int i = 0; i < 4; i++) {
            assertThat(post(path, "alice", "guess").statusCode())
                    .as("attempt " + (i + 2) + " comes within the lockout's first timeout")
                    .isEqualTo(429);
        }
        this.clock.advance(Duration.ofSeconds(1));
        assertThat(post(path, "alice", "secret").statusCode()).isEqualTo(200);
        assertThat(post(path, "alice", "secret").statusCode())
                .as("the success reset the lockout")
                .isEqualTo(200);
    }

    @ParameterizedTest
    @ValueSource(strings = {"/login/declared-status", "/login/declared-status-future"})
    void everyCallOfAHandlerThatDeclaresAnErrorStatusIsAFailure(String path) throws Exception {
        assertThat(post(path, "alice", "secret").statusCode()).isEqualTo(401);
        for (int i = 0; i < 3; i++) {
            assertThat(post(path, "alice", "secret").statusCode())
                    .as("attempt " + (i + 2) + ": the call before was answered 401 and reset nothing")
                    .isEqualTo(429);
        }
    }

    @Test
    void failuresAnsweredWithAnErrorStatusUseUpACountOfFailures() throws Exception {
        for (int i = 0; i < 5; i++) {
            assertThat(post("/check/send-error", "bob", "secret").statusCode())
                    .as("successes are given back")
                    .isEqualTo(200);
        }
        for (int i = 0; i < 3; i++) {
            assertThat(post("/check/send-error", "bob", "guess").statusCode()).isEqualTo(401);
        }
        assertThat(post("/check/send-error", "bob", "secret").statusCode())
                .as("three failures used up the limit")
                .isEqualTo(429);
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

        private static boolean wrong(Credentials credentials) {
            return !"secret".equals(credentials.password());
        }

        @PostMapping("/login/problem")
        @Throttled(policy = "login", key = "#credentials.user")
        Object problem(@RequestBody Credentials credentials) {
            return wrong(credentials)
                    ? ProblemDetail.forStatusAndDetail(HttpStatus.UNAUTHORIZED, "wrong password")
                    : Map.of("user", credentials.user());
        }

        @PostMapping("/login/error-response")
        @Throttled(policy = "login", key = "#credentials.user")
        ErrorResponse errorResponse(@RequestBody Credentials credentials) {
            return wrong(credentials)
                    ? ErrorResponse.create(
                            new IllegalArgumentException("wrong password"), HttpStatus.UNAUTHORIZED, "wrong password")
                    : ErrorResponse.create(new IllegalStateException("none"), HttpStatus.OK, "welcome");
        }

        @PostMapping("/login/send-error")
        @Throttled(policy = "login", key = "#credentials.user")
        void sendError(@RequestBody Credentials credentials, HttpServletResponse response) throws IOException {
            if (wrong(credentials)) {
                response.sendError(401, "wrong password");
            }
        }

        @PostMapping("/login/set-status")
        @Throttled(policy = "login", key = "#credentials.user")
        Map<String, String> setStatus(@RequestBody Credentials credentials, HttpServletResponse response) {
            if (wrong(credentials)) {
                response.setStatus(401);
                return Map.of("error", "wrong password");
            }
            return Map.of("user", credentials.user());
        }

        @PostMapping("/login/status-then-future")
        @Throttled(policy = "login", key = "#credentials.user")
        CompletableFuture<String> statusThenFuture(@RequestBody Credentials credentials, HttpServletResponse response) {
            if (wrong(credentials)) {
                response.setStatus(401);
            }
            return CompletableFuture.completedFuture(wrong(credentials) ? "wrong password" : "welcome");
        }

        /** Keyed by the request alone: decided before its arguments are bound, settled by its advice. */
        @PostMapping("/login/send-error-by-ip")
        @Throttled(policy = "login", key = "#ip")
        void sendErrorByIp(@RequestBody Credentials credentials, HttpServletResponse response) throws IOException {
            if (wrong(credentials)) {
                response.sendError(401, "wrong password");
            }
        }

        @PostMapping("/login/declared-status")
        @ResponseStatus(HttpStatus.UNAUTHORIZED)
        @Throttled(policy = "login", key = "#credentials.user")
        Map<String, String> declaredStatus(@RequestBody Credentials credentials) {
            return Map.of("error", "wrong password");
        }

        @PostMapping("/login/declared-status-future")
        @ResponseStatus(HttpStatus.UNAUTHORIZED)
        @Throttled(policy = "login", key = "#credentials.user")
        CompletableFuture<Map<String, String>> declaredStatusFuture(@RequestBody Credentials credentials) {
            return CompletableFuture.completedFuture(Map.of("error", "wrong password"));
        }

        @PostMapping("/check/send-error")
        @Throttled(policy = "failures", key = "#credentials.user")
        void checkSendError(@RequestBody Credentials credentials, HttpServletResponse response) throws IOException {
            if (wrong(credentials)) {
                response.sendError(401, "wrong password");
            }
        }
    }
}
