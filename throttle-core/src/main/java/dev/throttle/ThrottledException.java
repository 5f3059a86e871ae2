package dev.throttle;

/**
 * Thrown when a throttled call is refused. Carries the policy and the {@link Decision}; has no
 * stack trace, because a refusal is an expected outcome on a hot path, not a bug.
 */
public class ThrottledException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final transient Policy policy;

    private final Decision decision;

    /**
     * Creates an exception for a refusal.
     * @param policy the policy that refused
     * @param decision the refusal
     */
    public ThrottledException(Policy policy, Decision decision) {
        super(message(policy, decision), null, false, false);
        this.policy = policy;
        this.decision = decision;
    }

    private static String message(Policy policy, Decision decision) {
        if (!decision.canSucceedLater()) {
            return "Policy '" + policy.name() + "' can never grant this call: its cost is more than the "
                    + policy.maxCost() + " the policy allows at once";
        }
        return "Policy '" + policy.name() + "' refused the call; retry after " + decision.retryAfterSeconds() + "s";
    }

    /**
     * Returns the policy that refused.
     * @return the policy
     */
    public Policy getPolicy() {
        return this.policy;
    }

    /**
     * Returns the refusal.
     * @return the decision
     */
    public Decision getDecision() {
        return this.decision;
    }
}
