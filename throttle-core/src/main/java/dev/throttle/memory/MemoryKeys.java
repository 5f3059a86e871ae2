package dev.throttle.memory;

import java.security.DigestException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * How the memory store holds a key, which callers choose and attackers may: as the key itself while
 * its characters take at most {@value #MAX_INLINE_BYTES} bytes (up to 64 Latin-1 characters, or 32
 * others), otherwise as a 128-bit digest of it, 32 bytes. So no key costs more than a 64-byte one
 * (a 200-character key of CJK characters took 400 bytes of characters, about 550 bytes per key
 * with its entry), while the keys most limits use (addresses, e-mail addresses, names) stay as
 * they are and cost no hashing. A digested key costs one SHA-256 and one 32-byte object per call.
 * SHA-256, so that no one can choose a key that lands on another's state; the first 128 bits, so
 * that two keys meet by chance once in 2^64 keys.
 */
final class MemoryKeys {

    /** The most bytes of characters a key is held with as it is. */
    static final int MAX_INLINE_BYTES = 64;

    private static final ThreadLocal<Hasher> HASHERS = ThreadLocal.withInitial(Hasher::new);

    private MemoryKeys() {}

    /**
     * Returns what the store's cache holds for a key.
     * @param key the key as the throttler normalized it
     * @return the key itself, or its {@link Digest}
     */
    static Object of(String key) {
        int length = key.length();
        if (length <= MAX_INLINE_BYTES / 2 || (length <= MAX_INLINE_BYTES && isLatin1(key))) {
            return key;
        }
        return HASHERS.get().digest(key);
    }

    /** Whether Java keeps the key one byte per character. */
    private static boolean isLatin1(String key) {
        for (int i = 0; i < key.length(); i++) {
            if (key.charAt(i) > 0xFF) {
                return false;
            }
        }
        return true;
    }

    /**
     * The first 128 bits of a key's SHA-256.
     *
     * @param high the first 64 bits
     * @param low the next 64 bits
     */
    record Digest(long high, long low) {}

    /** One thread's SHA-256 and buffers, so that digesting allocates nothing but the digest. */
    private static final class Hasher {

        private final MessageDigest sha256;

        /** A key's characters as UTF-16 bytes (one encoding per key): room for the keys a throttler sends. */
        private byte[] characters = new byte[400];

        private final byte[] hash = new byte[32];

        Hasher() {
            try {
                this.sha256 = MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException ex) {
                throw new IllegalStateException("SHA-256 is required of every Java platform", ex);
            }
        }

        Digest digest(String key) {
            int length = key.length();
            if (2 * length > this.characters.length) {
                this.characters = new byte[2 * length];
            }
            for (int i = 0; i < length; i++) {
                char c = key.charAt(i);
                this.characters[2 * i] = (byte) (c >>> 8);
                this.characters[2 * i + 1] = (byte) c;
            }
            this.sha256.update(this.characters, 0, 2 * length);
            try {
                this.sha256.digest(this.hash, 0, this.hash.length);
            } catch (DigestException ex) {
                throw new IllegalStateException("SHA-256 gives 32 bytes", ex);
            }
            return new Digest(longAt(0), longAt(8));
        }

        private long longAt(int offset) {
            long value = 0;
            for (int i = 0; i < 8; i++) {
                value = (value << 8) | (this.hash[offset + i] & 0xFF);
            }
            return value;
        }
    }
}
