package dev.throttle.spring.redis;

import dev.throttle.Policy;

/**
 * Hears every store operation that the failure mode answered instead of the store: for metrics
 * ({@code throttle.decisions} with {@code outcome=error}). Called on the calling thread, or on a
 * Redis I/O thread for the {@code *Async} operations, so it must be quick and must not throw.
 */
@FunctionalInterface
public interface StoreFailureListener {

	/** A listener that does nothing. */
	StoreFailureListener NONE = (policy, operation, error) -> {
	};

	/**
	 * Called once per operation that did not get its answer from the store.
	 * @param policy the policy of the operation
	 * @param operation {@code tryAcquire}, {@code refund}, {@code peek} or {@code reset}
	 * @param error why: the store's failure, or a {@link StoreUnavailableException} when the call was
	 * answered at once because the store is known to be down
	 */
	void onFailure(Policy policy, String operation, RuntimeException error);

}
