package dev.throttle.spring.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleWebFluxAutoConfiguration;
import io.reactivex.rxjava3.core.Single;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.reactivestreams.Publisher;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.reactive.function.server.RequestPredicates;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The lockout probe through a real WebFlux (Netty) port, for handlers returning a
 * {@code Publisher}, an RxJava {@code Single}, a {@code ResponseEntity<Mono<T>>} and a
 * {@code Mono<ResponseEntity<Mono<T>>>} or {@code Mono<ResponseEntity<Flux<T>>>}: followed to their
 * outcome (the body's, not the entity's status), so a wrong password is no success. Nor is one
 * answered by a {@code ProblemDetail}, by the exchange's status alone or by a functional endpoint's
 * {@code ServerResponse}.
 */
@SpringBootTest(
        classes = WebFluxReturnTypeTests.LoginApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.main.web-application-type=reactive",
            "throttle.policies.login.algorithm=lockout",
            "throttle.policies.login.timeouts=1s,2s,4s",
            "throttle.policies.login.reset-on-success=true"
        })
class WebFluxReturnTypeTests {

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

    private HttpResponse<String> login(String path, String user, String password) throws Exception {
        return client.send(
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
                "/login/publisher",
                "/login/single",
                "/login/entity",
                "/login/mono-of-entity-of-mono",
                "/login/mono-of-entity-of-flux",
                "/login/problem",
                "/login/exchange-status",
                "/login/exchange-status-by-ip",
                "/login/functional",
                "/login/plain-throws",
                "/login/plain-entity",
                "/login/plain-exchange-status"
            })
    void fiveWrongPasswordsDoNotPassALockoutAndASuccessResetsIt(String path) throws Exception {
        assertThat(login(path, "alice", "guess").statusCode()).isEqualTo(401);
        for (int i = 0; i < 4; i++) {
            assertThat(login(path, "alice", "guess").statusCode())
                    .as("attempt " + (i + 2))
                    .isEqualTo(429);
        }
        this.clock.advance(Duration.ofSeconds(1));
        assertThat(login(path, "alice", "secret").statusCode()).isEqualTo(200);
        assertThat(login(path, "alice", "secret").statusCode())
                .as("the success reset the lockout")
                .isEqualTo(200);
    }

    @ParameterizedTest
    @ValueSource(strings = {"/login/declared-status", "/login/declared-status-mono"})
    void everyCallOfAHandlerThatDeclaresAnErrorStatusIsAFailure(String path) throws Exception {
        assertThat(login(path, "alice", "secret").statusCode()).isEqualTo(401);
        for (int i = 0; i < 3; i++) {
            assertThat(login(path, "alice", "secret").statusCode())
                    .as("attempt " + (i + 2) + ": the call before was answered 401 and reset nothing")
                    .isEqualTo(429);
        }
    }

    @Test
    void aHandlerReturningAnotherLibrarysTypeThatNeedsTheRequestFailsAtStartup() {
        new ReactiveWebApplicationContextRunner()
                .withConfiguration(
                        AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleWebFluxAutoConfiguration.class))
                .withBean(SingleWithIp.class)
                .withPropertyValues("throttle.policies.login.algorithm=lockout", "throttle.policies.login.timeouts=1s")
                .run((context) -> {
                    assertThat(context).hasFailed();
                    Throwable failure = context.getStartupFailure();
                    while (!(failure instanceof ThrottleConfigurationException) && failure.getCause() != null) {
                        failure = failure.getCause();
                    }
                    assertThat(failure)
                            .isInstanceOf(ThrottleConfigurationException.class)
                            .hasMessage(
                                    "@Throttled(policy = \"login\", key = \"#ip\") on SingleWithIp.hello() uses the "
                                            + "request, which a method returning Single<String> cannot see in a WebFlux application "
                                            + "(only Reactor carries it): return Mono or Flux");
                });
    }

    record Credentials(String user, String password) {}

    @RestController
    static class SingleWithIp {

        @GetMapping("/hello")
        @Throttled(policy = "login", key = "#ip")
        public Single<String> hello() {
            return Single.just("hello");
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import({LoginEndpoints.class, FunctionalLogins.class})
    static class LoginApplication {

        @Bean
        ManualTimeSource manualTimeSource() {
            return new ManualTimeSource();
        }

        @Bean
        RouterFunction<ServerResponse> functionalLogin(FunctionalLogins logins) {
            return RouterFunctions.route(RequestPredicates.POST("/login/functional"), logins::login);
        }
    }

    /** A functional endpoint's handler, answering a wrong password with a 401 {@code ServerResponse}. */
    static class FunctionalLogins {

        @Throttled(policy = "login", key = "'functional'")
        public Mono<ServerResponse> login(ServerRequest request) {
            return request.bodyToMono(Credentials.class)
                    .flatMap((credentials) -> "secret".equals(credentials.password())
                            ? ServerResponse.ok().bodyValue(Map.of("user", credentials.user()))
                            : ServerResponse.status(HttpStatus.UNAUTHORIZED).build());
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

        // the entity arrives in a Mono and its status is 200 before the body's outcome is known
        @PostMapping("/login/mono-of-entity-of-mono")
        @Throttled(policy = "login", key = "#credentials.user")
        Mono<ResponseEntity<Mono<Map<String, String>>>> monoOfEntityOfMono(@RequestBody Credentials credentials) {
            return Mono.fromSupplier(() -> ResponseEntity.ok(Mono.fromCallable(() -> check(credentials))));
        }

        // answers without an error of the publisher's: by a ProblemDetail, or by the exchange's status alone
        @PostMapping("/login/problem")
        @Throttled(policy = "login", key = "#credentials.user")
        Mono<ProblemDetail> problem(@RequestBody Credentials credentials) {
            return Mono.fromSupplier(() -> "secret".equals(credentials.password())
                    ? ProblemDetail.forStatusAndDetail(HttpStatus.OK, "welcome")
                    : ProblemDetail.forStatusAndDetail(HttpStatus.UNAUTHORIZED, "wrong password"));
        }

        @PostMapping("/login/exchange-status")
        @Throttled(policy = "login", key = "#credentials.user")
        Mono<Void> exchangeStatus(@RequestBody Credentials credentials, ServerWebExchange exchange) {
            return Mono.fromRunnable(() -> {
                if (!"secret".equals(credentials.password())) {
                    exchange.getResponse().setStatusCode(HttpStatus.UNAUTHORIZED);
                }
            });
        }

        /** Keyed by the request alone: decided before its arguments are resolved, settled by its advice. */
        @PostMapping("/login/exchange-status-by-ip")
        @Throttled(policy = "login", key = "#ip")
        Mono<Void> exchangeStatusByIp(@RequestBody Mono<Credentials> body, ServerWebExchange exchange) {
            return body.doOnNext((credentials) -> {
                        if (!"secret".equals(credentials.password())) {
                            exchange.getResponse().setStatusCode(HttpStatus.UNAUTHORIZED);
                        }
                    })
                    .then();
        }

        // plain values: the handler runs when Spring calls it, and its outcome is known when it returns
        @PostMapping("/login/plain-throws")
        @Throttled(policy = "login", key = "#credentials.user")
        Map<String, String> plainThrows(@RequestBody Credentials credentials) {
            return check(credentials);
        }

        @PostMapping("/login/plain-entity")
        @Throttled(policy = "login", key = "#credentials.user")
        ResponseEntity<Map<String, String>> plainEntity(@RequestBody Credentials credentials) {
            return "secret".equals(credentials.password())
                    ? ResponseEntity.ok(Map.of("user", credentials.user()))
                    : ResponseEntity.status(HttpStatus.UNAUTHORIZED).build();
        }

        @PostMapping("/login/plain-exchange-status")
        @Throttled(policy = "login", key = "#credentials.user")
        Map<String, String> plainExchangeStatus(@RequestBody Credentials credentials, ServerHttpResponse response) {
            if (!"secret".equals(credentials.password())) {
                response.setStatusCode(HttpStatus.UNAUTHORIZED);
                return Map.of("error", "wrong password");
            }
            return Map.of("user", credentials.user());
        }

        @PostMapping("/login/declared-status")
        @ResponseStatus(HttpStatus.UNAUTHORIZED)
        @Throttled(policy = "login", key = "#credentials.user")
        Map<String, String> declaredStatus(@RequestBody Credentials credentials) {
            return Map.of("error", "wrong password");
        }

        @PostMapping("/login/declared-status-mono")
        @ResponseStatus(HttpStatus.UNAUTHORIZED)
        @Throttled(policy = "login", key = "#credentials.user")
        Mono<Map<String, String>> declaredStatusMono(@RequestBody Credentials credentials) {
            return Mono.just(Map.of("error", "wrong password"));
        }

        @PostMapping("/login/mono-of-entity-of-flux")
        @Throttled(policy = "login", key = "#credentials.user")
        Mono<ResponseEntity<Flux<Map<String, String>>>> monoOfEntityOfFlux(@RequestBody Credentials credentials) {
            return Mono.fromSupplier(() -> ResponseEntity.ok(Flux.defer(() -> Flux.just(check(credentials)))));
        }
    }
}
