package dev.throttle;

/**
 * Where throttling state lives: the SPI that the memory store and the Redis store implement.
 *
 * <p>A store binds each policy once ({@link #limiter(Policy)}) so that per-policy work (a cache,
 * a script's arguments) is done up front rather than per decision. Implementations must be
 * thread-safe, and every {@link Limiter} operation on one key must be atomic with respect to
 * every other operation on that key, in this process and (for shared stores) in every process.
 */
public interface ThrottleStore extends AutoCloseable {

	/**
	 * Returns the limiter that holds {@code policy}'s keys. Calling it again with an equal policy
	 * returns a limiter over the same state.
	 * @param policy the policy
	 * @return the policy's limiter
	 */
	Limiter limiter(Policy policy);

	/**
	 * Like {@link #limiter(Policy)}, telling {@code listener} about every operation of the limiter
	 * that the store could not carry out ({@link ThrottleListener#onStoreError}): what a
	 * {@link Throttler} binds its policies with. The default ignores the listener, which is right for
	 * a store that reports nothing of its own (its failures reach the caller as exceptions); a
	 * failure policy, which answers in the store's place, overrides it.
	 * @param policy the policy
	 * @param listener hears the store errors of this limiter's calls
	 * @return the policy's limiter
	 */
	default Limiter limiter(Policy policy, ThrottleListener listener) {
		return limiter(policy);
	}

	/**
	 * Returns a short, low-cardinality name for metrics: {@code memory} or {@code redis}.
	 * @return the store's kind
	 */
	String kind();

	/**
	 * Whether the synchronous {@link Limiter} methods never block on I/O, so that they may run on
	 * an event-loop thread. The default is false; the memory store says true.
	 * @return true when decisions are made in memory
	 */
	default boolean isNonBlocking() {
		return false;
	}

	/**
	 * Releases what the store holds. The default does nothing.
	 */
	@Override
	default void close() {
	}

}
