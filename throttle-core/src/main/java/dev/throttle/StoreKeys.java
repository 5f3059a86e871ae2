package dev.throttle;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import org.jspecify.annotations.Nullable;

/**
 * The keys as stores see them: a caller's key normalized before it reaches a store, so that no key
 * bypasses its policy (null and blank share one bucket) and none is too long for a store to keep.
 */
final class StoreKeys {

    private StoreKeys() {}

    /**
     * Returns the key as stores see it: {@link Throttler#SHARED_KEY} for null or blank, the SHA-256
     * digest (base64url, prefixed {@code #}) for keys longer than {@value Throttler#MAX_KEY_LENGTH}
     * characters, otherwise the key itself.
     * @param key a caller's key
     * @return the stored key
     */
    static String of(@Nullable String key) {
        if (key == null || key.isBlank()) {
            return Throttler.SHARED_KEY;
        }
        if (key.length() <= Throttler.MAX_KEY_LENGTH) {
            return key;
        }
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
            return "#" + Base64.getUrlEncoder().withoutPadding().encodeToString(digest);
        } catch (NoSuchAlgorithmException ex) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", ex);
        }
    }
}
