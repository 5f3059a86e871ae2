package dev.throttle.spring.internal.aop;

import dev.throttle.BoundPolicy;
import dev.throttle.Decision;
import dev.throttle.Policy;

/**
 * One {@code @Throttled}, resolved once at startup: the policy it names, bound to the store, so
 * that a call looks nothing up by name; what a call costs; and how a call that returns normally
 * settles what it took. The key is not here: {@link ThrottleKeys} evaluates the keys of a call.
 *
 * @param bound the policy, bound to the store
 * @param cost units per call
 * @param resetOnSuccess whether a normal return clears the key
 * @param refundOnSuccess whether a normal return gives back what the call took (count: failures)
 * @param mode whether the policy is in shadow mode (never refuses, sends no headers), read per call
 */
record Throttle(BoundPolicy bound, int cost, boolean resetOnSuccess, boolean refundOnSuccess,
		PolicyModes.Switch mode) {

	/** The mode of a throttle that always enforces. */
	static final PolicyModes.Switch ENFORCED = new PolicyModes.Switch();

	/**
	 * A throttle that always enforces its policy.
	 * @param bound the policy, bound to the store
	 * @param cost units per call
	 * @param resetOnSuccess whether a normal return clears the key
	 * @param refundOnSuccess whether a normal return gives back what the call took
	 */
	Throttle(BoundPolicy bound, int cost, boolean resetOnSuccess, boolean refundOnSuccess) {
		this(bound, cost, resetOnSuccess, refundOnSuccess, ENFORCED);
	}

	/**
	 * Whether the policy only counts what it would refuse, now.
	 * @return whether it is in shadow mode
	 */
	boolean shadow() {
		return this.mode.getAsBoolean();
	}

	/**
	 * Returns the policy.
	 * @return the policy
	 */
	Policy policy() {
		return this.bound.policy();
	}

	/**
	 * Whether a normal return changes state, so that the call's outcome must be known.
	 * @return whether a success is settled
	 */
	boolean settlesOnSuccess() {
		return this.resetOnSuccess || this.refundOnSuccess;
	}

	/**
	 * The state a reset on success leaves: what a call on a neutral key is told, nothing in use.
	 * @return the policy with a full quota
	 */
	PolicyDecision resetState() {
		int quota = policy().quota();
		return new PolicyDecision(policy(), Decision.allow(quota, quota, 0));
	}

}
