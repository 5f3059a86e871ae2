package dev.throttle.spring.admission;

import dev.throttle.Decision;
import dev.throttle.Policy;

/**
 * A decision and the policy that made it: what a response's rate-limit headers and a refusal are
 * written from.
 *
 * @param policy the policy (with the numbers of the plan that decided)
 * @param decision the decision
 */
public record PolicyDecision(Policy policy, Decision decision) {}
