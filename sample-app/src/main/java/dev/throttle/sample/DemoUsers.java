package dev.throttle.sample;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Locale;
import java.util.Map;

import org.springframework.stereotype.Component;

/**
 * The demo's users: alice@example.com / wonderland and bob@example.com / builder.
 */
@Component
class DemoUsers {

	private final Map<String, String> passwords = Map.of("alice@example.com", "wonderland", "bob@example.com",
			"builder");

	/**
	 * Returns the normalized e-mail when the password matches.
	 * @param email as typed
	 * @param password as typed
	 * @return the e-mail, trimmed and lower-cased
	 * @throws InvalidCredentialsException when the e-mail or password is wrong
	 */
	String authenticate(String email, String password) {
		String normalized = email.trim().toLowerCase(Locale.ROOT);
		String expected = this.passwords.getOrDefault(normalized, "");
		boolean matches = MessageDigest.isEqual(expected.getBytes(StandardCharsets.UTF_8),
				password.getBytes(StandardCharsets.UTF_8));
		if (!matches || expected.isEmpty()) {
			throw new InvalidCredentialsException();
		}
		return normalized;
	}

}
