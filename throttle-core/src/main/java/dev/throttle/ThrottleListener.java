package dev.throttle;

/**
 * Hears what a {@link Throttler} decides: for metrics, audit logs and alerts. Every method has an
 * empty default. Implementations must be thread-safe and fast: they run on the caller's thread,
 * inside the decision path. An exception thrown by a listener is logged nowhere and propagates to
 * the caller, so listeners should not throw.
 */
public interface ThrottleListener {

	/**
	 * Hears every decision of {@link Throttler#tryAcquire}, allowed or not.
	 * @param policy the policy
	 * @param decision the decision
	 * @param storeNanos how long the store took to decide
	 */
	default void onDecision(Policy policy, Decision decision, long storeNanos) {
	}

	/**
	 * Hears every refusal, with the key as the caller gave it (an e-mail address, an IP address):
	 * mind where it is written.
	 * @param policy the policy that refused
	 * @param key the caller's key
	 * @param decision the refusal
	 */
	default void onRejected(Policy policy, String key, Decision decision) {
	}

	/**
	 * Hears a store failure; the store's failure mode decided the call instead.
	 * @param policy the policy whose decision failed
	 * @param error what went wrong
	 */
	default void onStoreError(Policy policy, RuntimeException error) {
	}

}
