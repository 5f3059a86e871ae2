package dev.throttle;

import java.time.Duration;
import java.util.List;

/**
 * Several limits in one policy, all of one algorithm: a call passes only when every limit allows
 * it, and is then charged to all of them at once (a refusal by one charges none), such as 10 a
 * second and 1,000 an hour. Its algorithm is its limits' algorithm, which must
 * {@link Algorithm#takesSeveralLimits() take several limits} (token bucket, GCRA, fixed window).
 * A store keeps one state per key holding every limit's state, in the order of the limits, and
 * decides with the algorithm's own transition for each limit.
 *
 * @param name the policy's name
 * @param limits the limits, at least one, each named {@code name}
 */
public record MultiLimitPolicy(String name, List<Policy> limits) implements Policy {

    public MultiLimitPolicy {
        Checks.name(name);
        limits = List.copyOf(limits);
        if (limits.isEmpty()) {
            throw new InvalidPolicyException(name, "limits", "must hold at least one limit");
        }
        Algorithm<?> algorithm = limits.get(0).algorithm();
        if (!algorithm.takesSeveralLimits()) {
            throw new InvalidPolicyException(
                    name,
                    "limits",
                    "cannot be used with the " + algorithm.id()
                            + " algorithm: only token-bucket, gcra and fixed-window take several limits");
        }
        for (Policy limit : limits) {
            if (!limit.name().equals(name) || !limit.algorithm().equals(algorithm) || limit.severalLimits()) {
                throw new InvalidPolicyException(
                        name,
                        "limits",
                        "must all be single limits of policy '" + name + "' and of one algorithm, was " + limit);
            }
            if (limit instanceof FixedWindowPolicy window && window.calendar() != null) {
                // a store that runs the transition elsewhere is given one calendar's boundaries per call
                throw new InvalidPolicyException(
                        name,
                        "limits",
                        "cannot hold a calendar window (" + window.calendar()
                                + "): a calendar window is its policy's only limit; use a policy of its own");
            }
        }
    }

    /**
     * Several limits of one policy.
     * @param limits the limits, each named as the policy
     * @return the policy
     */
    public static MultiLimitPolicy of(Policy... limits) {
        return new MultiLimitPolicy(limits[0].name(), List.of(limits));
    }

    @Override
    public boolean severalLimits() {
        return true;
    }

    @Override
    public Algorithm<?> algorithm() {
        return this.limits.get(0).algorithm();
    }

    /** The first limit's quota: {@link #limits()} lists each. */
    @Override
    public int quota() {
        return this.limits.get(0).quota();
    }

    /** The first limit's window: {@link #limits()} lists each. */
    @Override
    public Duration window() {
        return this.limits.get(0).window();
    }

    /** The most that every limit can grant. */
    @Override
    public int maxCost() {
        int max = Integer.MAX_VALUE;
        for (Policy limit : this.limits) {
            max = Math.min(max, limit.maxCost());
        }
        return max;
    }

    /** The longest of the limits': a key is neutral once every limit's state is. */
    @Override
    public Duration idleExpiry() {
        Duration longest = Duration.ZERO;
        for (Policy limit : this.limits) {
            longest = (limit.idleExpiry().compareTo(longest) > 0) ? limit.idleExpiry() : longest;
        }
        return longest;
    }
}
