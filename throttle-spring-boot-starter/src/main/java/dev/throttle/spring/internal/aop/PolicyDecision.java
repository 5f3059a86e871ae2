package dev.throttle.spring.internal.aop;

import dev.throttle.Decision;
import dev.throttle.Policy;

/**
 * A decision and the policy that made it, as handed to a {@link ThrottleRequestContext}.
 *
 * @param policy the policy
 * @param decision the decision
 */
public record PolicyDecision(Policy policy, Decision decision) {
}
