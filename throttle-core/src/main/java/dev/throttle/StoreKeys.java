package dev.throttle;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import org.jspecify.annotations.Nullable;

/**
 * The keys as stores see them: a caller's key normalized before it reaches a store, so that no key
 * bypasses its policy (null and blank share one bucket), none is too long for a store to keep, and
 * no two keys become one on their way to a store's bytes.
 */
final class StoreKeys {

    /**
     * Put before the UTF-16 code units of a key with a lone surrogate when it is digested, so that
     * its digest is never that of a key digested from its UTF-8 bytes.
     */
    private static final byte[] UTF_16_DOMAIN = "utf-16:".getBytes(StandardCharsets.US_ASCII);

    /** What a digested key starts with. */
    private static final char DIGEST = '#';

    private StoreKeys() {}

    /**
     * Returns the key as stores see it: {@link Throttler#SHARED_KEY} for null or blank, the SHA-256
     * digest (base64url, prefixed {@code #}) for keys longer than {@value Throttler#MAX_KEY_LENGTH}
     * characters, for keys with a lone surrogate and for keys that start with {@code #} (else a key
     * sent as {@code #} and a long key's digest would be that key's state), otherwise the key itself.
     *
     * <p>A lone surrogate (half of a UTF-16 pair, such as {@code "\ud800"} in a JSON string) has no
     * UTF-8 form: Redis's client and PostgreSQL's driver write it as {@code ?}, so {@code sur\ud800@x}
     * and {@code sur?@x} would be one key there, and anyone could lock out an address with a
     * {@code ?} in it. Such a key is digested from its UTF-16 code units instead, which keeps it apart.
     * @param key a caller's key
     * @return the stored key
     */
    static String of(@Nullable String key) {
        if (key == null || key.isBlank()) {
            return Throttler.SHARED_KEY;
        }
        boolean wellFormed = isWellFormed(key);
        // a key that starts as a digest does is digested too, so that no key sent can be another's digest
        if (key.length() <= Throttler.MAX_KEY_LENGTH && wellFormed && key.charAt(0) != DIGEST) {
            return key;
        }
        try {
            MessageDigest sha256 = MessageDigest.getInstance("SHA-256");
            if (wellFormed) {
                sha256.update(key.getBytes(StandardCharsets.UTF_8));
            } else {
                sha256.update(UTF_16_DOMAIN);
                // the code units as they are: an encoder would replace each lone surrogate alike
                byte[] units = new byte[2 * key.length()];
                for (int i = 0; i < key.length(); i++) {
                    units[2 * i] = (byte) (key.charAt(i) >> 8);
                    units[2 * i + 1] = (byte) key.charAt(i);
                }
                sha256.update(units);
            }
            return DIGEST + Base64.getUrlEncoder().withoutPadding().encodeToString(sha256.digest());
        } catch (NoSuchAlgorithmException ex) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", ex);
        }
    }

    /** Whether every surrogate of the key is half of a pair, so that its UTF-8 bytes name it alone. */
    private static boolean isWellFormed(String key) {
        for (int i = 0, length = key.length(); i < length; i++) {
            char c = key.charAt(i);
            if (Character.isSurrogate(c)) {
                if (Character.isHighSurrogate(c) && i + 1 < length && Character.isLowSurrogate(key.charAt(i + 1))) {
                    i++;
                } else {
                    return false;
                }
            }
        }
        return true;
    }
}
