package dev.throttle;

/**
 * A policy whose numbers make no sense: thrown when the policy is built, never at a decision.
 * Names the policy and the parameter (by its configuration name, such as {@code refill-period}).
 */
public final class InvalidPolicyException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    private final String policy;

    private final String parameter;

    private final String problem;

    /**
     * Creates an exception.
     * @param policy the policy's name
     * @param parameter the offending parameter's configuration name
     * @param problem what is wrong, for example "must be positive, was 0"
     */
    public InvalidPolicyException(String policy, String parameter, String problem) {
        super("policy '" + policy + "': " + parameter + " " + problem);
        this.policy = policy;
        this.parameter = parameter;
        this.problem = problem;
    }

    /**
     * Returns the policy's name.
     * @return the name
     */
    public String policy() {
        return this.policy;
    }

    /**
     * Returns the offending parameter's configuration name.
     * @return for example {@code capacity}
     */
    public String parameter() {
        return this.parameter;
    }

    /**
     * Returns what is wrong with the parameter.
     * @return for example "must be positive, was 0s"
     */
    public String problem() {
        return this.problem;
    }
}
