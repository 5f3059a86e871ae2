package dev.throttle.spring.bans;

import java.time.Duration;
import java.util.Set;

/**
 * A configured ban, checked at startup: the {@code after}-th refusal of one key by the listed
 * policies within {@code within} bans that key for {@code length}.
 *
 * @param name the ban's name ({@code throttle.bans.<name>})
 * @param after refusals that start the ban, at least 1
 * @param within the window in which refusals are counted
 * @param policies the policies whose refusals count; empty for every policy
 * @param length how long a ban lasts ({@code for})
 * @param status the status of the answer to a banned request: 429 or 403
 */
public record BanRule(String name, int after, Duration within, Set<String> policies, Duration length, int status) {

    /** Copies the policies, so that the rule never changes. */
    public BanRule {
        policies = Set.copyOf(policies);
    }

    /**
     * Whether a refusal of a policy counts towards this ban.
     * @param policy the refusing policy's name
     * @return whether it is listed, or no policy is
     */
    public boolean counts(String policy) {
        return this.policies.isEmpty() || this.policies.contains(policy);
    }
}
