package dev.throttle.spring.jdbc;

import dev.throttle.Policy;
import dev.throttle.resilience.RefusalMemory;
import java.time.Duration;
import java.util.Set;

/**
 * Settings of the jdbc store's near cache of refusals (see {@link JdbcThrottleStore}): whether the
 * refusals the database gave answer the key's next calls on this instance until their Retry-After,
 * how many refused keys each policy remembers, the shortest Retry-After worth remembering, and the
 * policies that always ask the database. Immutable and thread-safe.
 *
 * <p>A refusal writes nothing and stays true until its Retry-After unless the key is reset, given
 * back (a refund) or its policy changes. The store tells every instance of the first two with a
 * PostgreSQL {@code NOTIFY} on {@code <prefix>events}, which each instance hears on a connection
 * of its own ({@code LISTEN}); an instance that does not hear them (its connection lost, not yet
 * back) answers every call from the database.
 */
public final class JdbcNearCacheSettings {

    /**
     * Default {@link #minimumRetryAfter()}, as {@code throttle.store.jdbc.near-cache.minimum-retry-after}:
     * a database round trip costs far more than an entry, so a refusal of a few milliseconds that a
     * client repeats is worth remembering (a token bucket refilling every 10 ms, hammered).
     */
    public static final Duration DEFAULT_MINIMUM_RETRY_AFTER = Duration.ofMillis(1);

    private static final JdbcNearCacheSettings DISABLED = new JdbcNearCacheSettings(
            false,
            RefusalMemory.DEFAULT_MAXIMUM_KEYS,
            Duration.ofMillis(RefusalMemory.DEFAULT_MINIMUM_RETRY_MILLIS),
            Set.of());

    private final boolean enabled;

    private final long maximumKeys;

    private final Duration minimumRetryAfter;

    private final Set<String> databaseOnly;

    private JdbcNearCacheSettings(
            boolean enabled, long maximumKeys, Duration minimumRetryAfter, Set<String> databaseOnly) {
        this.enabled = enabled;
        this.maximumKeys = maximumKeys;
        this.minimumRetryAfter = minimumRetryAfter;
        this.databaseOnly = Set.copyOf(databaseOnly);
    }

    /**
     * No near cache and no events: every decision asks the database (its refusals are still
     * remembered, with the default bounds, to answer during an outage).
     * @return the settings
     */
    public static JdbcNearCacheSettings disabled() {
        return DISABLED;
    }

    /**
     * A near cache.
     * @param maximumKeys refused keys remembered per policy, at least 1
     * @param minimumRetryAfter the shortest Retry-After remembered, at least 1 ms
     * @param databaseOnly the names of the policies that answer every call from the database (their
     * refusals remembered for an outage only): for example those whose successful calls give back
     * what they took ({@code count: failures}), where each give-back would cost a {@code NOTIFY}
     * @return the settings
     * @throws IllegalArgumentException naming the property of a value out of range
     */
    public static JdbcNearCacheSettings of(long maximumKeys, Duration minimumRetryAfter, Set<String> databaseOnly) {
        if (maximumKeys < 1) {
            throw new IllegalArgumentException(
                    "throttle.store.jdbc.near-cache.maximum-keys must be at least 1, was " + maximumKeys);
        }
        if (minimumRetryAfter == null || minimumRetryAfter.toMillis() < 1) {
            throw new IllegalArgumentException(
                    "throttle.store.jdbc.near-cache.minimum-retry-after must be at least 1ms, was "
                            + minimumRetryAfter);
        }
        return new JdbcNearCacheSettings(true, maximumKeys, minimumRetryAfter, databaseOnly);
    }

    /**
     * Whether there is a near cache (and events) at all.
     * @return false for {@link #disabled()}
     */
    public boolean isEnabled() {
        return this.enabled;
    }

    /**
     * Returns how many refused keys each policy remembers.
     * @return the bound
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
     * Whether a policy's calls are answered from its remembered refusals while the database answers.
     * A policy of several limits never is (a refusal remembered here would lose its limits' items), nor
     * a concurrency policy, whose every release would cost a {@code NOTIFY}.
     * @param policy the policy
     * @return true when the near cache is enabled and the policy may answer from it
     */
    public boolean answersFor(Policy policy) {
        return this.enabled
                && !this.databaseOnly.contains(policy.name())
                && !policy.severalLimits()
                && !"concurrency".equals(policy.algorithm().id());
    }

    /**
     * Whether the refunds of a policy are published to the other instances: where its name answers
     * from the near cache under some numbers (a plan of one limit beside one of several, say), so a
     * policy of several limits publishes too, where it does not answer itself.
     * @param policy the policy
     * @return false for a policy that answers from the database only and for a concurrency policy
     */
    public boolean publishesGiveBacksFor(Policy policy) {
        return this.enabled
                && !this.databaseOnly.contains(policy.name())
                && !"concurrency".equals(policy.algorithm().id());
    }

    @Override
    public String toString() {
        return this.enabled
                ? "near cache of " + this.maximumKeys + " keys per policy, refusals of "
                        + this.minimumRetryAfter.toMillis() + " ms or more"
                        + (this.databaseOnly.isEmpty() ? "" : ", from the database only: " + this.databaseOnly)
                : "no near cache";
    }
}
