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

    private final Map<String, String> passwords =
            Map.of("alice@example.com", "wonderland", "bob@example.com", "builder");

    /**
     * Returns every user's password by e-mail, for Spring Security's sign-in (which keeps them
     * hashed).
     * @return the passwords by normalized e-mail
     */
    Map<String, String> passwords() {
        return this.passwords;
    }

    /**
     * Returns an e-mail as the users are keyed: trimmed and lower-cased the locale-independent way.
     * @param email as typed
     * @return the normalized e-mail
     */
    static String normalize(String email) {
        return email.trim().toLowerCase(Locale.ROOT);
    }

    /**
     * Returns the normalized e-mail when the password matches.
     * @param email as typed
     * @param password as typed
     * @return the e-mail, trimmed and lower-cased
     * @throws InvalidCredentialsException when the e-mail or password is wrong
     */
    String authenticate(String email, String password) {
        String normalized = normalize(email);
        String expected = this.passwords.getOrDefault(normalized, "");
        boolean matches = MessageDigest.isEqual(
                expected.getBytes(StandardCharsets.UTF_8), password.getBytes(StandardCharsets.UTF_8));
        if (!matches || expected.isEmpty()) {
            throw new InvalidCredentialsException();
        }
        return normalized;
    }
}
