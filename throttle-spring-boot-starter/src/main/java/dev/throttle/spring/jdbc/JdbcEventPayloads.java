package dev.throttle.spring.jdbc;

import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * The jdbc store's events as text, apart from {@link JdbcEvents} so that a limiter writes its
 * resets' events without the PostgreSQL driver's classes: {@code k <sender> <policy> <key>}, {@code p <sender>
 * <policy>} and a listener's proof of delivery {@code h <nonce>}, the names in Base64 (URL alphabet,
 * no padding) so that no name or key can be read as another.
 */
final class JdbcEventPayloads {

    /** PostgreSQL refuses a payload of 8000 bytes or more; a longer key's event forgets its whole policy. */
    static final int MAXIMUM_PAYLOAD = 7900;

    private static final Base64.Encoder ENCODER = Base64.getUrlEncoder().withoutPadding();

    private static final Base64.Decoder DECODER = Base64.getUrlDecoder();

    private JdbcEventPayloads() {}

    /** The channel of the store whose tables start with {@code tablePrefix}. */
    static String channelOf(String tablePrefix) {
        return tablePrefix + "events";
    }

    /** The event that {@code key} of {@code policy} changed (its whole policy, for a key too long to name). */
    static String keyChanged(String sender, String policy, String key) {
        String payload = "k " + sender + " " + encode(policy) + " " + encode(key);
        return (payload.length() <= MAXIMUM_PAYLOAD) ? payload : policyChanged(sender, policy);
    }

    /** The event that {@code policy} changed. */
    static String policyChanged(String sender, String policy) {
        return "p " + sender + " " + encode(policy);
    }

    static String encode(String text) {
        return ENCODER.encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }

    /** @throws IllegalArgumentException when {@code text} is not Base64 */
    static String decode(String text) {
        return new String(DECODER.decode(text), StandardCharsets.UTF_8);
    }
}
