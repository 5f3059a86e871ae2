package dev.throttle.resilience;

import dev.throttle.Decision;
import org.jspecify.annotations.Nullable;

/**
 * What a store's limiter may add for a {@link ResilientThrottleStore}: the refusals it remembers
 * (the Redis store's near cache, the jdbc store's memory for an outage; {@link RefusalMemory} keeps
 * them), which answer before the failure mode while the store cannot be reached, so that a key the store refused before an outage stays refused until its Retry-After.
 * A limiter that remembers nothing does not implement it; the failure policy asks only those that do.
 */
public interface RememberedRefusals {

    /**
     * Returns a refusal of {@code key} that this limiter remembers and knows to be still true now,
     * without asking its store, or null when it knows none. Never blocks, never throws.
     * @param key the key
     * @param cost units the call asks for
     * @return the remembered refusal with the time left, or null
     */
    @Nullable
    Decision rememberedRefusal(String key, int cost);

    /**
     * Forgets what this limiter remembers of {@code key} on this instance, without asking its store:
     * what a failure policy does for a reset made while the store cannot be reached, so that a user
     * unlocked during an outage is unlocked on this instance at once. Never blocks, never throws.
     * @param key the key
     */
    void forgetRemembered(String key);
}
