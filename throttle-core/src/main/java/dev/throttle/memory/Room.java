package dev.throttle.memory;

import com.github.benmanes.caffeine.cache.Cache;
import dev.throttle.TimeSource;

/**
 * The bound on one policy's keys, kept where keys come in rather than by eviction: a key the
 * store does not hold is taken in only while the policy holds fewer than its maximum keys. Nothing
 * is ever evicted to make room, since forgetting a key whose state is not neutral (a refused key, a
 * lockout's rung) would hand it a fresh quota; keys leave only once idle for the policy's idle
 * expiry, when their state is neutral. While the policy is full, a key it does not hold is decided
 * by the policy's shared overflow cell.
 *
 * <p>The count is Caffeine's estimate, so threads that add keys at the same instant may take the
 * policy a few keys past its maximum. Thread-safe.
 */
final class Room {

    /** How often a full policy drops its expired keys, which Caffeine counts until it removes them. */
    private static final long CLEAN_UP_EVERY_MILLIS = 1_000;

    private final Cache<?, ?> cache;

    private final long maximumKeys;

    private final TimeSource clock;

    /**
     * When a full policy last dropped its expired keys, on the store's clock; a second before the
     * store bound the policy at first. A plain field: a stale read only drops them once more.
     */
    private long cleanedAt;

    Room(Cache<?, ?> cache, long maximumKeys, TimeSource clock) {
        this.cache = cache;
        this.maximumKeys = maximumKeys;
        this.clock = clock;
        this.cleanedAt = clock.currentTimeMillis() - CLEAN_UP_EVERY_MILLIS;
    }

    /**
     * Whether a key the policy does not hold may be taken in now. When the policy looks full, its
     * expired keys are dropped first (at most once a second: under a flood every new key asks).
     * @return false when the key must be decided by the overflow cell
     */
    boolean hasRoom() {
        if (this.cache.estimatedSize() < this.maximumKeys) {
            return true;
        }
        long now = this.clock.currentTimeMillis();
        if (now - this.cleanedAt < CLEAN_UP_EVERY_MILLIS && now >= this.cleanedAt) {
            return false;
        }
        this.cleanedAt = now;
        this.cache.cleanUp();
        return this.cache.estimatedSize() < this.maximumKeys;
    }
}
