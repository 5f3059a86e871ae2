package dev.throttle.spring.internal.aop;

import java.util.List;

/**
 * What a throttled call took, kept until the call is settled: its throttles (with the plan and
 * cost chosen for this call), its keys, its decisions (whose receipts let a refund undo exactly that
 * call) and its request (told the settled state).
 *
 * @param throttles the call's throttles, in order
 * @param keys the keys, in throttle order
 * @param decisions the allowed decisions, in throttle order
 * @param request the request the call runs in
 */
record Taken(List<Throttle> throttles, String[] keys, List<PolicyDecision> decisions, ThrottleRequestContext request) {

	/** Nothing taken: a safelisted client's call, which is not throttled and settles nothing. */
	static final Taken NOTHING = new Taken(List.of(), new String[0], List.of(), ThrottleRequestContext.NONE);

	/**
	 * The same take, settled through another context of its request.
	 * @param other a context of the same request (one bound to it, to be used on another thread)
	 * @return the take with {@code other} as its request
	 */
	Taken in(ThrottleRequestContext other) {
		return new Taken(this.throttles, this.keys, this.decisions, other);
	}

}
