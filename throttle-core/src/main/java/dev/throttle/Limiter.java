package dev.throttle;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * One policy's keys in one {@link ThrottleStore}. Every method is atomic per key and thread-safe.
 *
 * <p>Keys arrive already normalized by the {@link Throttler} (never null, at most 200 characters);
 * costs are between 1 and the policy's {@link Policy#maxCost()}.
 */
public interface Limiter {

    /**
     * The partition of every key of a store that is one thing to fail ({@link #partition}'s default):
     * the whole store.
     */
    Object ONE_PARTITION = new Object() {
        @Override
        public String toString() {
            return "the whole store";
        }
    };

    /**
     * Returns the policy this limiter applies.
     * @return the policy
     */
    Policy policy();

    /**
     * Takes {@code cost} units for {@code key} if the policy allows it now; a refusal changes nothing.
     * @param key the key
     * @param cost units to take, between 1 and {@link Policy#maxCost()}
     * @return the decision
     */
    Decision tryAcquire(String key, int cost);

    /**
     * Takes {@code cost} units for {@code key} for the earliest turn within {@code maxWaitMillis}: a
     * reservation, in one atomic step (one round trip to a networked store). The decision is allowed
     * now ({@link Decision#waitMillis()} 0, as {@link #tryAcquire}), or allowed for a later turn
     * ({@link Decision#waitMillis()} until it; the units are taken already, so every later call is
     * decided after this one), or refused when the turn would come later than {@code maxWaitMillis},
     * taking nothing, with the {@link Decision#retryAfterMillis()} a refusal of {@link #tryAcquire}
     * has. A caller that gives up its turn refunds it by the decision's receipt
     * ({@link #refund(String, int, Decision)}), so that the next caller gets it. With
     * {@code maxWaitMillis} 0 it is {@link #tryAcquire}.
     *
     * <p>The default is for stores and algorithms that cannot reserve: it decides as
     * {@link #tryAcquire}, never waiting.
     * @param key the key
     * @param cost units to take, between 1 and {@link Policy#maxCost()}
     * @param maxWaitMillis the longest the call may wait for its turn, not negative
     * @return the decision
     */
    default Decision reserve(String key, int cost, long maxWaitMillis) {
        return tryAcquire(key, cost);
    }

    /**
     * Like {@link #reserve}, without blocking the calling thread. The default completes with
     * {@link #tryAcquireAsync} when {@code maxWaitMillis} is 0, else with {@link #reserve}, which is
     * right for stores that never block; a networked store overrides it.
     * @param key the key
     * @param cost units to take
     * @param maxWaitMillis the longest the call may wait for its turn, not negative
     * @return the decision, when made
     */
    default CompletionStage<Decision> reserveAsync(String key, int cost, long maxWaitMillis) {
        return (maxWaitMillis == 0)
                ? tryAcquireAsync(key, cost)
                : CompletableFuture.completedFuture(reserve(key, cost, maxWaitMillis));
    }

    /**
     * Gives back {@code cost} units that an allowed {@link #tryAcquire} took, as if that call had
     * not been made (as far as the algorithm can tell: a lockout steps back one rung). Never
     * gives back more than the key's neutral state.
     * @param key the key
     * @param cost units to give back
     */
    void refund(String key, int cost);

    /**
     * Gives back what one allowed {@link #tryAcquire} took, identified by its decision's
     * {@link Decision#receipt() receipt}: exactly what that call took, or nothing once it is gone
     * (its window ended, its attempt aged out). The default ignores the receipt and calls
     * {@link #refund(String, int)}, for stores that give none.
     * @param key the key
     * @param cost units that call took
     * @param receipt the receipt of that call's decision
     */
    default void refund(String key, int cost, long receipt) {
        refund(key, cost);
    }

    /**
     * Gives back what one allowed {@link #tryAcquire} took, identified by its decision: as
     * {@link #refund(String, int, long)} with its receipt, and for a policy with several limits,
     * each limit by its own receipt ({@link Decision#limit(int)}). The default refunds by the
     * decision's receipt.
     * @param key the key
     * @param cost units that call took
     * @param taken that call's decision
     */
    default void refund(String key, int cost, Decision taken) {
        refund(key, cost, taken.receipt());
    }

    /**
     * Like {@link #refund(String, int, Decision)}, without blocking the calling thread.
     * @param key the key
     * @param cost units that call took
     * @param taken that call's decision
     * @return completes when done
     */
    default CompletionStage<Void> refundAsync(String key, int cost, Decision taken) {
        return refundAsync(key, cost, taken.receipt());
    }

    /**
     * Like {@link #refund(String, int, long)}, without blocking the calling thread.
     * @param key the key
     * @param cost units that call took
     * @param receipt the receipt of that call's decision
     * @return completes when done
     */
    default CompletionStage<Void> refundAsync(String key, int cost, long receipt) {
        return refundAsync(key, cost);
    }

    /**
     * Takes {@code units} more for {@code key}, for a call allowed already whose cost turned out
     * higher than it was charged (a cost known only after the call): never refused, in one atomic
     * step (one round trip to a networked store). What the key has left may go below nothing, into
     * debt, which later calls pay back: they are refused until the policy's refills bring what is left
     * back to their cost, and their retry-after counts the debt. The key owes at most {@code maxDebt}
     * units after the charge; units beyond that are not taken. Only algorithms that carry a debt
     * ({@link Algorithm#takesActualCost()}) charge; the default is for stores that cannot.
     * @param key the key
     * @param units units to take, at least 1
     * @param maxDebt the most units the key may owe after the charge, not negative
     * @return the units the key owes after the charge (0 when it owes nothing), or -1 when a failure
     * policy kept the charge for a store it could not reach
     * @throws UnsupportedOperationException when the store cannot charge after the call
     */
    default int charge(String key, int units, int maxDebt) {
        throw new UnsupportedOperationException(
                "This store cannot charge a cost known after the call (policy '" + policy().name() + "')");
    }

    /**
     * Like {@link #charge}, without blocking the calling thread. The default completes with
     * {@link #charge}, which is right for stores that never block; a networked store overrides it.
     * @param key the key
     * @param units units to take, at least 1
     * @param maxDebt the most units the key may owe after the charge, not negative
     * @return the units the key owes after the charge, when done
     */
    default CompletionStage<Integer> chargeAsync(String key, int units, int maxDebt) {
        try {
            return CompletableFuture.completedFuture(charge(key, units, maxDebt));
        } catch (RuntimeException ex) {
            return CompletableFuture.failedFuture(ex);
        }
    }

    /**
     * Returns what a call of cost 1 would be told now, without changing anything.
     * @param key the key
     * @return the decision a call would get
     */
    Decision peek(String key);

    /**
     * Forgets {@code key}'s state: the next call is treated as the first.
     * @param key the key
     */
    void reset(String key);

    /**
     * Like {@link #reset}, saying whether the store itself forgot the key. A failure policy
     * ({@link dev.throttle.resilience.ResilientThrottleStore}) answers false when its store could not
     * be reached: it forgot the key in its own fallback and keeps the reset for the store, to apply
     * when the store answers again, but for now the store still holds the key's state. The default
     * resets and answers true: a store without a failure policy reports a failure by throwing.
     * @param key the key
     * @return true when the store forgot the key; false when it could not be reached
     */
    default boolean tryReset(String key) {
        reset(key);
        return true;
    }

    /**
     * Whether this limiter decides calls in the order they were made on one thread even when the
     * caller did not wait for the earlier ones' answers: a call made after another one returned is
     * decided after it (one connection that carries calls in order, as Redis's does; a store whose
     * calls complete before they return). Then a concurrency slot is released without waiting for
     * the store ({@link Slot#close()}): the caller's next call on the key finds it free all the same.
     * False by default: a store that runs its calls on a pool of threads may decide a later call
     * first.
     * @return whether calls are decided in the order they were made
     */
    default boolean decidesInOrderMade() {
        return false;
    }

    /**
     * Whether an acquire of this limiter counts only once the store confirms that it will survive the
     * store's failover (a Redis policy with {@code durability: replicated}). A failure policy
     * ({@link dev.throttle.resilience.ResilientThrottleStore}) then keeps for the store every call it
     * allowed without such a confirmation (the store failed it, did not confirm it in time, or was
     * down) and applies it to the store when it answers again, after what the store was owed before,
     * so that what the call took still counts on every instance afterwards. A call whose first try
     * reached the store may so count twice: the side the limit is for. False by default.
     * @return whether unconfirmed acquires are kept for the store
     */
    default boolean keepsUnconfirmedAcquires() {
        return false;
    }

    /**
     * Returns which part of the store holds {@code key}'s state: the unit that fails on its own (a
     * Redis Cluster master, by the key's hash slot), so that a failure policy
     * ({@link dev.throttle.resilience.ResilientThrottleStore}) keeps the health of each part apart:
     * while one part is down, its keys are answered by the failure mode and the keys of the others
     * still go to the store. Equal objects for keys on the same part; {@code toString} names the part
     * in logs (never a key). Called on every decision, so it must be cheap and should not allocate;
     * the answer may change as the store's topology changes (a failover).
     *
     * <p>The default, for a store that is one thing to fail (memory, a single Redis behind Sentinel or
     * standalone), is {@link #ONE_PARTITION} for every key.
     * @param key the key
     * @return the key's partition; never null
     */
    default Object partition(String key) {
        return ONE_PARTITION;
    }

    /**
     * Like {@link #tryAcquire}, without blocking the calling thread: for event-loop callers
     * (WebFlux). The default completes at once with the synchronous result, which is right for
     * stores that never block; a networked store overrides it.
     * @param key the key
     * @param cost units to take
     * @return the decision, when made
     */
    default CompletionStage<Decision> tryAcquireAsync(String key, int cost) {
        return CompletableFuture.completedFuture(tryAcquire(key, cost));
    }

    /**
     * Like {@link #peek}, without blocking the calling thread: what a failure policy probes a store
     * with during an outage. The default completes at once with the synchronous result, which is
     * right for stores that never block; a networked store overrides it.
     * @param key the key
     * @return the decision a call would get, when known
     */
    default CompletionStage<Decision> peekAsync(String key) {
        return CompletableFuture.completedFuture(peek(key));
    }

    /**
     * Like {@link #refund}, without blocking the calling thread.
     * @param key the key
     * @param cost units to give back
     * @return completes when done
     */
    default CompletionStage<Void> refundAsync(String key, int cost) {
        refund(key, cost);
        return CompletableFuture.completedFuture(null);
    }

    /**
     * Like {@link #reset}, without blocking the calling thread.
     * @param key the key
     * @return completes when done
     */
    default CompletionStage<Void> resetAsync(String key) {
        reset(key);
        return CompletableFuture.completedFuture(null);
    }
}
