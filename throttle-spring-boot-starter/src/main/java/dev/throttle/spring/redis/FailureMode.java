package dev.throttle.spring.redis;

/**
 * What throttling does while its shared store (Redis) cannot answer, as
 * {@code throttle.store.redis.failure-mode}.
 */
public enum FailureMode {

	/** Allow every call: availability over protection. */
	OPEN,

	/** Refuse every call, with a short Retry-After: protection over availability (a login throttle). */
	CLOSED,

	/**
	 * Decide on this instance with a bounded memory store, so each instance still enforces the limit
	 * on its own share of the traffic. The default.
	 */
	LOCAL

}
