package dev.throttle.spring.aop;

import java.lang.reflect.Method;
import java.util.List;

/**
 * The throttles of one method, resolved and parsed once: what a call needs and nothing it would
 * have to look up.
 */
final class ThrottledMethod {

	/** A method that no throttle applies to. */
	static final ThrottledMethod NONE = new ThrottledMethod(null, List.of(), null);

	private final Method method;

	private final List<Throttle> throttles;

	private final ThrottleKeys keys;

	private final boolean reactive;

	private final boolean many;

	private final boolean settlesOnSuccess;

	/**
	 * Creates a resolved method.
	 * @param method the method, or null for {@link #NONE}
	 * @param throttles the throttles, in annotation order
	 * @param keys their keys, in the same order
	 */
	ThrottledMethod(Method method, List<Throttle> throttles, ThrottleKeys keys) {
		this.method = method;
		this.throttles = List.copyOf(throttles);
		this.keys = keys;
		Class<?> returnType = (method != null) ? method.getReturnType() : void.class;
		this.reactive = ReturnTypes.isReactive(returnType);
		this.many = ReturnTypes.isMany(returnType);
		this.settlesOnSuccess = this.throttles.stream().anyMatch(Throttle::settlesOnSuccess);
	}

	Method method() {
		return this.method;
	}

	List<Throttle> throttles() {
		return this.throttles;
	}

	ThrottleKeys keys() {
		return this.keys;
	}

	/**
	 * Whether the method returns Mono or Flux, so that it is throttled at subscription.
	 * @return whether it is reactive
	 */
	boolean reactive() {
		return this.reactive;
	}

	/**
	 * Whether the method returns a Flux, whose outcome is its completion.
	 * @return whether it emits many values
	 */
	boolean many() {
		return this.many;
	}

	/**
	 * Whether a normal return changes state (reset-on-success or count: failures), so that the
	 * call's outcome must be known.
	 * @return whether any throttle settles on success
	 */
	boolean settlesOnSuccess() {
		return this.settlesOnSuccess;
	}

}
