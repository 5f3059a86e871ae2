package dev.throttle.sample;

import dev.throttle.spring.annotation.Throttled;
import jakarta.validation.Valid;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;

/**
 * The demo's API. Login is throttled twice: per e-mail by an escalating lockout that a successful
 * login clears, and per client address by a token bucket. Hello is throttled per API key under the
 * key's plan, or per client address.
 */
@RestController
class LoginController {

    private final DemoUsers users;

    LoginController(DemoUsers users) {
        this.users = users;
    }

    @PostMapping(path = "/api/login", consumes = MediaType.APPLICATION_JSON_VALUE)
    // lower-cased the locale-independent way, as DemoUsers does: in a Turkish locale "I" would not become "i"
    @Throttled(policy = "login", key = "#form.email.trim().toLowerCase(T(java.util.Locale).ROOT)")
    @Throttled(policy = "login-ip", key = "#ip")
    public Map<String, String> login(@Valid @RequestBody LoginForm form) {
        return Map.of("email", this.users.authenticate(form.email(), form.password()));
    }

    /**
     * Hello, throttled by the {@code api} policy: per API key under the key's plan ({@code free-key}
     * is on {@code free}, {@code pro-key} on {@code pro}, see {@link ApiKeys}); without a key, or with
     * one the application does not know, per client address under the base numbers (a made-up key
     * must not buy a bucket of its own).
     */
    @GetMapping("/api/hello")
    @Throttled(
            policy = "api",
            key = "@apiKeys.planOf(#apiKey) != null ? 'key:' + #apiKey : #ip",
            plan = "@apiKeys.planOf(#apiKey)")
    public Map<String, String> hello(@RequestHeader(name = "X-Api-Key", required = false) String apiKey) {
        return Map.of("message", "Hello!");
    }

    @ExceptionHandler(InvalidCredentialsException.class)
    @ResponseStatus(HttpStatus.UNAUTHORIZED)
    ProblemDetail invalidCredentials(InvalidCredentialsException ex) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.UNAUTHORIZED, ex.getMessage());
        problem.setTitle("Unauthorized");
        return problem;
    }
}
