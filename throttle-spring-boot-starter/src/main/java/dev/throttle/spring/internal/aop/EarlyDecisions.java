package dev.throttle.spring.internal.aop;

import java.lang.reflect.Method;
import java.util.List;

import org.jspecify.annotations.Nullable;

import dev.throttle.ThrottledException;

/**
 * Decides a handler's {@code @Throttled} before its arguments are bound, when every key reads
 * nothing but the request ({@code #ip}, {@code #principal}, or no key): a refused request then runs
 * no {@code @ModelAttribute} method, no binding and no validation, and a request that fails binding
 * (a 400, a 500 from a missing entity) is still counted. The decision is kept in a request attribute
 * that the handler's advice claims, so that the call is charged once and still settled by its
 * outcome (reset-on-success, count: failures). A handler that returns a deferred reactive type,
 * or whose keys read its arguments, is decided by its advice, as before.
 */
public final class EarlyDecisions {

	/** The request attribute that carries an early decision to the handler's advice. */
	public static final String ATTRIBUTE = EarlyDecisions.class.getName() + ".decided";

	private final ThrottledMethods methods;

	/**
	 * Creates the early decisions.
	 * @param methods the annotated methods
	 */
	public EarlyDecisions(ThrottledMethods methods) {
		this.methods = methods;
	}

	/**
	 * Decides a handler now if its keys read only the request.
	 * @param method the handler method
	 * @param beanType the handler's class (the user class, not a proxy's)
	 * @param request the request
	 * @return what to keep under {@link #ATTRIBUTE} for the handler's advice, or null when the handler
	 * is decided later (or not throttled)
	 * @throws ThrottledException when a policy refuses (what the earlier ones took is given back)
	 */
	public @Nullable Object decide(Method method, Class<?> beanType, ThrottleRequestContext request) {
		ThrottledMethod throttled = this.methods.resolve(method, beanType);
		// a plan or cost chosen by an expression may read the arguments: such a call is decided later
		if (throttled.throttles().isEmpty() || throttled.reactive() || !throttled.keys().requestOnly()
				|| throttled.hasChoices() || request.safelisted()) {
			return null;
		}
		String[] keys = throttled.keys().evaluate(new Object[throttled.method().getParameterCount()], request);
		List<PolicyDecision> decisions = ThrottleFlow.acquire(throttled.throttles(), keys, request);
		return new Decided(throttled.method(), new Taken(throttled.throttles(), keys, decisions, request));
	}

	/**
	 * Claims the early decision of a call, if it has one: then the call is not charged again.
	 * @param throttled the called method
	 * @param request the request
	 * @return what the early decision took, or null
	 */
	static @Nullable Taken claim(ThrottledMethod throttled, ThrottleRequestContext request) {
		if (request.getAttribute(ATTRIBUTE) instanceof Decided decided && decided.method().equals(throttled.method())) {
			// claimed once: a second call of the handler in the same request (a forward) is charged anew
			request.removeAttribute(ATTRIBUTE);
			return decided.taken();
		}
		return null;
	}

	private record Decided(Method method, Taken taken) {
	}

}
