package dev.throttle;

import java.time.Duration;
import java.util.List;

/**
 * A named throttling policy: an algorithm and its validated numbers. Policies are immutable
 * values (records) and thread-safe; an invalid number throws {@link InvalidPolicyException}
 * when the policy is built.
 *
 * <p>Each algorithm is one record implementing this interface, with its {@link Algorithm} (its
 * configuration name and parameters, its transition and its numbers) nested
 * in it. Stores and the starter reach an algorithm only through {@link #algorithm()}, so adding
 * one changes none of them.
 *
 * @see TokenBucketPolicy
 * @see GcraPolicy
 * @see FixedWindowPolicy
 * @see SlidingLogPolicy
 * @see LockoutPolicy
 */
public interface Policy {

    /**
     * Returns the policy's name, as in {@code throttle.policies.<name>} and {@code @Throttled(policy)}.
     * @return the name
     */
    String name();

    /**
     * Returns the algorithm.
     * @return the algorithm
     */
    Algorithm<?> algorithm();

    /**
     * Returns the quota advertised in {@code RateLimit-Policy} ({@code q}).
     * @return calls or tokens per {@link #window()}
     */
    int quota();

    /**
     * Returns the window advertised in {@code RateLimit-Policy} ({@code w}).
     * @return the window
     */
    Duration window();

    /**
     * Returns the largest cost one call can ever be granted.
     * @return the largest grantable cost
     */
    int maxCost();

    /**
     * Returns how long after its last use a key's state is certainly neutral again: a store may
     * forget an idle key after this long.
     * @return the idle span
     */
    Duration idleExpiry();

    /**
     * Returns the limits a call must pass, all of them, to be allowed: this policy itself, except
     * for a {@link MultiLimitPolicy}. Read when a policy is bound or its headers formatted, never per
     * decision.
     * @return one policy per limit, each of this policy's algorithm and name
     */
    default List<? extends Policy> limits() {
        return List.of(this);
    }

    /**
     * Returns whether this policy's {@link #limits()} are several limits whose state a store keeps
     * together, one part per limit: true for a {@link MultiLimitPolicy}, even of one limit.
     * @return false for a policy that is its only limit
     */
    default boolean severalLimits() {
        return false;
    }
}
