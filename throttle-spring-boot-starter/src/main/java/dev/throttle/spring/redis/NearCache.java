package dev.throttle.spring.redis;

import dev.throttle.TimeSource;
import dev.throttle.resilience.RefusalMemory;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * Refusals that Redis gave to this instance, remembered until their Retry-After: one
 * {@link RefusalMemory} per policy name, which says what an answer from it can and cannot be. Resets,
 * refunds and policy changes drop entries on this instance and, by events, on every other
 * ({@link RedisThrottleEvents}). Thread-safe.
 */
final class NearCache {

    private final NearCacheSettings settings;

    private final @Nullable TimeSource clock;

    private final Map<String, RefusalMemory> byPolicy = new ConcurrentHashMap<>();

    NearCache(NearCacheSettings settings, @Nullable TimeSource clock) {
        this.settings = settings;
        this.clock = clock;
    }

    NearCacheSettings settings() {
        return this.settings;
    }

    /** The entries of one policy name, made at first use. */
    RefusalMemory of(String policy) {
        RefusalMemory entries = this.byPolicy.get(policy);
        return (entries != null)
                ? entries
                : this.byPolicy.computeIfAbsent(
                        policy,
                        (name) -> new RefusalMemory(
                                this.settings.maximumKeys(),
                                this.settings.minimumRetryAfter().toMillis(),
                                this.clock));
    }

    /** Forgets a key of a policy: it was reset or given back, here or on another instance. */
    void forget(String policy, String key) {
        RefusalMemory entries = this.byPolicy.get(policy);
        if (entries != null) {
            entries.forget(key);
        }
    }

    /** Forgets every key of a policy: it changed. */
    void forgetPolicy(String policy) {
        RefusalMemory entries = this.byPolicy.get(policy);
        if (entries != null) {
            entries.forgetAll();
        }
    }

    /** Forgets everything: events may have been missed (the subscription was lost and is back). */
    void forgetAll() {
        this.byPolicy.values().forEach(RefusalMemory::forgetAll);
    }

    /** How many refusals are remembered, all policies together (an estimate, as Caffeine's). */
    long size() {
        long size = 0;
        for (RefusalMemory entries : this.byPolicy.values()) {
            size += entries.size();
        }
        return size;
    }
}
