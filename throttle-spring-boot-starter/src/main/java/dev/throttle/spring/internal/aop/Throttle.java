package dev.throttle.spring.internal.aop;

import dev.throttle.BoundPolicy;
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
 */
record Throttle(BoundPolicy bound, int cost, boolean resetOnSuccess, boolean refundOnSuccess) {

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

}
