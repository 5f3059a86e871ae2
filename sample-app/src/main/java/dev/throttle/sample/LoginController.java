package dev.throttle.sample;

import java.util.Map;

import jakarta.validation.Valid;

import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;

import dev.throttle.spring.annotation.Throttled;

/**
 * The demo's API. Login is throttled twice: per e-mail by an escalating lockout that a successful
 * login clears, and per client address by a token bucket.
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

	@GetMapping("/api/hello")
	@Throttled(policy = "api", key = "#ip")
	public Map<String, String> hello() {
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
