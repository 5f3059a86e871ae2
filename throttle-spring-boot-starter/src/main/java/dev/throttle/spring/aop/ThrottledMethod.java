package dev.throttle.spring.aop;

import java.lang.reflect.Method;
import java.util.List;

import org.springframework.expression.Expression;

import dev.throttle.Policy;

/**
 * The throttles of one method, resolved and parsed once.
 *
 * @param method the method
 * @param throttles the throttles, in annotation order
 */
record ThrottledMethod(Method method, List<Throttle> throttles) {

	/**
	 * Whether a normal return changes state (reset-on-success or count: failures), so that the
	 * call's outcome must be known.
	 * @return whether any throttle settles on success
	 */
	boolean settlesOnSuccess() {
		for (Throttle throttle : this.throttles) {
			if (throttle.resetOnSuccess() || throttle.refundOnSuccess()) {
				return true;
			}
		}
		return false;
	}

	/**
	 * One {@code @Throttled}, resolved against its policy.
	 *
	 * @param policy the policy
	 * @param key the parsed key expression, or null for the shared bucket
	 * @param keySource the expression as written
	 * @param cost units per call
	 * @param resetOnSuccess whether a normal return clears the key
	 * @param refundOnSuccess whether a normal return gives back what the call took
	 */
	record Throttle(Policy policy, Expression key, String keySource, int cost, boolean resetOnSuccess,
			boolean refundOnSuccess) {
	}

}
