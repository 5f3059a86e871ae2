package dev.throttle.spring.redis;

import dev.throttle.Policy;
import dev.throttle.resilience.RefusalMemory;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * Settings of the Redis store's near cache of refusals (see {@link RedisThrottleStore}): how many
 * refused keys each policy remembers on this instance, the shortest Retry-After worth remembering,
 * and which policies answer from it while Redis answers. Immutable and thread-safe.
 *
 * <p>Every algorithm's refusal writes nothing and stays true until its Retry-After unless the key is
 * reset, given back (a refund) or its policy changes: until then no call, on any instance, can move
 * the key's state toward allowing it (other calls are refused too, or only take more). Resets,
 * refunds and policy changes are published on {@code <key-prefix>:events} and drop the entries on
 * every instance. So every policy answers from the near cache by default; the starter turns it off
 * by default for policies that give back every successful call ({@code count: failures}), where a
 * refusal is routinely undone by another instance's success and each give-back would cost a
 * {@code PUBLISH}. Only refusals of calls of cost 1 are remembered (see {@link NearCache}).
 */
public final class NearCacheSettings {

    /** Default {@link #maximumKeys()}, as {@code throttle.store.redis.near-cache.maximum-keys}. */
    public static final long DEFAULT_MAXIMUM_KEYS = RefusalMemory.DEFAULT_MAXIMUM_KEYS;

    /** Default {@link #minimumRetryAfter()}, as {@code throttle.store.redis.near-cache.minimum-retry-after}. */
    public static final Duration DEFAULT_MINIMUM_RETRY_AFTER =
            Duration.ofMillis(RefusalMemory.DEFAULT_MINIMUM_RETRY_MILLIS);

    private static final NearCacheSettings DISABLED = new NearCacheSettings(0, DEFAULT_MINIMUM_RETRY_AFTER, Map.of());

    private final long maximumKeys;

    private final Duration minimumRetryAfter;

    private final Map<String, Boolean> policies;

    private NearCacheSettings(long maximumKeys, Duration minimumRetryAfter, Map<String, Boolean> policies) {
        this.maximumKeys = maximumKeys;
        this.minimumRetryAfter = minimumRetryAfter;
        this.policies = Map.copyOf(policies);
    }

    /**
     * No near cache and no events: every decision is one call to Redis, and resets publish nothing.
     * @return the settings
     */
    public static NearCacheSettings disabled() {
        return DISABLED;
    }

    /**
     * A near cache in which every policy answers from its remembered refusals.
     * @param maximumKeys refused keys remembered per policy, at least 1
     * @param minimumRetryAfter the shortest Retry-After remembered, at least 1 ms
     * @return the settings
     * @throws IllegalArgumentException naming the property of a value out of range
     */
    public static NearCacheSettings of(long maximumKeys, Duration minimumRetryAfter) {
        if (maximumKeys < 1) {
            throw new IllegalArgumentException(
                    "throttle.store.redis.near-cache.maximum-keys must be at least 1, was " + maximumKeys);
        }
        if (minimumRetryAfter == null || minimumRetryAfter.toMillis() < 1) {
            throw new IllegalArgumentException(
                    "throttle.store.redis.near-cache.minimum-retry-after must be at least 1ms, was "
                            + minimumRetryAfter);
        }
        return new NearCacheSettings(maximumKeys, minimumRetryAfter, Map.of());
    }

    /**
     * Returns these settings with a policy's own switch.
     * @param policy the policy's name
     * @param answers whether the policy answers from its remembered refusals while Redis answers (it
     * remembers them either way, for an outage)
     * @return the settings
     */
    public NearCacheSettings withPolicy(String policy, boolean answers) {
        Map<String, Boolean> policies = new HashMap<>(this.policies);
        policies.put(policy, answers);
        return new NearCacheSettings(this.maximumKeys, this.minimumRetryAfter, policies);
    }

    /**
     * Whether there is a near cache (and events) at all.
     * @return false for {@link #disabled()}
     */
    public boolean isEnabled() {
        return this.maximumKeys > 0;
    }

    /**
     * Returns how many refused keys each policy remembers.
     * @return the bound, 0 when disabled
     */
    public long maximumKeys() {
        return this.maximumKeys;
    }

    /**
     * Returns the shortest Retry-After that is remembered.
     * @return the threshold
     */
    public Duration minimumRetryAfter() {
        return this.minimumRetryAfter;
    }

    /**
     * Whether a policy answers from its remembered refusals while Redis answers.
     * @param policy the policy
     * @return its own switch, else true when the near cache is enabled
     */
    public boolean answersFor(Policy policy) {
        return isEnabled() && this.policies.getOrDefault(policy.name(), Boolean.TRUE);
    }

    @Override
    public String toString() {
        return isEnabled()
                ? "near cache of " + this.maximumKeys + " keys per policy, refusals of "
                        + this.minimumRetryAfter.toMillis() + " ms or more"
                        + (this.policies.isEmpty() ? "" : ", " + this.policies)
                : "no near cache";
    }
}
