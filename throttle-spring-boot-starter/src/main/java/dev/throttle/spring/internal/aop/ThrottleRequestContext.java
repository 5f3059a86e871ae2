package dev.throttle.spring.internal.aop;

import java.util.List;

import org.jspecify.annotations.Nullable;

/**
 * What a throttled call learns from, and tells, the request it runs in: the client's address
 * ({@code #ip}), the authenticated user's name ({@code #principal}), and the decisions of an
 * allowed call (so that the web layer can send rate-limit headers). Implementations are
 * thread-safe and read the current request from thread-bound state.
 */
public interface ThrottleRequestContext {

	/** No request: {@code #ip} and {@code #principal} are null and nothing is written. */
	ThrottleRequestContext NONE = new ThrottleRequestContext() {
	};

	/**
	 * Returns the client address of the current request.
	 * @return the address as the server sees it, or null outside a request
	 */
	default @Nullable String clientAddress() {
		return null;
	}

	/**
	 * Returns the name of the current request's authenticated user.
	 * @return the name, or null when there is none
	 */
	default @Nullable String principalName() {
		return null;
	}

	/**
	 * Hears the decisions of a call that every policy allowed, before the call runs.
	 * @param decisions the decisions, in annotation order
	 */
	default void allowed(List<PolicyDecision> decisions) {
	}

	/**
	 * Hears a refusal where it is decided, before the exception that carries it is thrown, so that
	 * the response has {@code Retry-After} and the rate-limit headers whatever renders the refusal
	 * (the starter's handler, or the application's own). The default does nothing.
	 * @param refusal the refusing policy and its decision
	 */
	default void refused(PolicyDecision refusal) {
	}

	/**
	 * Whether the current request's client address is safelisted ({@code throttle.http.safelist}):
	 * such a request is never throttled. The default says no.
	 * @return whether throttling is skipped
	 */
	default boolean safelisted() {
		return false;
	}

	/**
	 * Returns an attribute of the current request: how a decision taken before the handler's
	 * arguments were bound reaches the handler's advice. The default has none.
	 * @param name the attribute's name
	 * @return the attribute, or null
	 */
	default @Nullable Object getAttribute(String name) {
		return null;
	}

	/**
	 * Removes an attribute of the current request. The default does nothing.
	 * @param name the attribute's name
	 */
	default void removeAttribute(String name) {
	}

	/**
	 * Returns a context bound to the current request that stays right when used later on another
	 * thread: what a Spring MVC handler returning {@code Mono} or {@code Flux} needs, since its
	 * publisher is subscribed, and its decisions made, after the handler has returned. The default
	 * returns this context.
	 * @return a context for the current request
	 */
	default ThrottleRequestContext snapshot() {
		return this;
	}

}
