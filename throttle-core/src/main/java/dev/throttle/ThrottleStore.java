package dev.throttle;

import java.util.function.BiConsumer;

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
     *
     * <p>A policy of the same name and algorithm with other numbers (one of its plans, or its numbers
     * changed at run time by {@link Throttler#update}) must get a limiter over the same keys, whose
     * state each algorithm keeps in a form that means the same under any of its numbers (used tokens,
     * a GCRA score with its interval, counts and times). This call is how a store learns that a
     * policy's numbers changed: a store that keeps anything per policy (a cache of refusals) drops or
     * refreshes it when a name it holds is bound again with other numbers.
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
     * Whether the store charges a cost known after the call ({@link Limiter#charge}), so that a
     * startup can refuse an actual cost on a store that would refuse each charge. The default is true.
     * @return whether charges after the call are taken
     */
    default boolean chargesAfterTheCall() {
        return true;
    }

    /**
     * Asks the store to tell {@code listener} whenever another instance sharing it gives back what a
     * key of a policy held (a concurrency slot released, a refund, a reset), with the policy's name and
     * the key: calls waiting here for a slot of that key then try again at once rather than after
     * their hint. A store that instances share and that hears such events overrides it; the default
     * hears none, which is right for a store of one instance (its own releases are told without the
     * store).
     * @param listener told the policy's name and the key; must return quickly and not throw
     */
    default void onGivenBack(BiConsumer<String, String> listener) {}

    /**
     * Releases what the store holds. The default does nothing.
     */
    @Override
    default void close() {}
}
