package dev.throttle;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import org.jspecify.annotations.Nullable;

/**
 * One policy of a {@link Throttler}, bound to its store: what a caller that uses the same policy
 * on every call (an annotated method, a URL rule) holds, so that no call looks the policy up by
 * name. Obtained from {@link Throttler#bound(String)}.
 *
 * <p>Keys are normalized as {@link Throttler} describes; every decision is told to the
 * throttler's listeners. Thread-safe.
 */
public final class BoundPolicy {

	private final Policy policy;

	private final Limiter limiter;

	/**
	 * The limiter again when it says who made each decision (a failure policy's), else null: then
	 * every decision is the store's own, and nothing per call is needed to say so.
	 */
	private final SourcedLimiter sourced;

	/** Who makes the decisions of a plain limiter, and refuses a cost above the policy's maximum. */
	private final DecisionSource storeSource;

	private final ThrottleListener[] listeners;

	private final Decision neverAllowed;

	BoundPolicy(Policy policy, Limiter limiter, DecisionSource storeSource, ThrottleListener[] listeners) {
		this.policy = policy;
		this.limiter = limiter;
		this.sourced = (limiter instanceof SourcedLimiter sourcedLimiter) ? sourcedLimiter : null;
		this.storeSource = storeSource;
		this.listeners = listeners;
		this.neverAllowed = Decision.neverAllowed(policy.quota());
	}

	/**
	 * Returns the policy.
	 * @return the policy
	 */
	public Policy policy() {
		return this.policy;
	}

	/**
	 * Takes {@code cost} units for {@code key} if allowed. A cost above the policy's
	 * {@link Policy#maxCost()} is refused with {@link Decision#neverAllowed(int)} and touches no
	 * state.
	 * @param key the key (null or blank: the shared bucket)
	 * @param cost units to take, at least 1
	 * @return the decision
	 * @throws IllegalArgumentException for a cost below 1
	 */
	public Decision tryAcquire(@Nullable String key, int cost) {
		checkCost(cost);
		if (cost > this.policy.maxCost()) {
			return notify(key, this.neverAllowed, this.storeSource, 0);
		}
		if (this.listeners.length == 0) {
			// nobody asks who decided, so not even a failure policy's limiter is asked to say it
			return this.limiter.tryAcquire(Throttler.normalizeKey(key), cost);
		}
		long start = System.nanoTime();
		if (this.sourced != null) {
			SourcedDecision answer = this.sourced.tryAcquireSourced(Throttler.normalizeKey(key), cost);
			return notify(key, answer.decision(), answer.source(), System.nanoTime() - start);
		}
		Decision decision = this.limiter.tryAcquire(Throttler.normalizeKey(key), cost);
		return notify(key, decision, this.storeSource, System.nanoTime() - start);
	}

	/**
	 * Like {@link #tryAcquire}, without blocking the calling thread (for event-loop callers such
	 * as WebFlux): the store's {@link Limiter#tryAcquireAsync}.
	 * @param key the key (null or blank: the shared bucket)
	 * @param cost units to take, at least 1
	 * @return the decision, when made
	 * @throws IllegalArgumentException for a cost below 1
	 */
	public CompletionStage<Decision> tryAcquireAsync(@Nullable String key, int cost) {
		checkCost(cost);
		if (cost > this.policy.maxCost()) {
			return CompletableFuture.completedFuture(notify(key, this.neverAllowed, this.storeSource, 0));
		}
		if (this.listeners.length == 0) {
			return this.limiter.tryAcquireAsync(Throttler.normalizeKey(key), cost);
		}
		long start = System.nanoTime();
		if (this.sourced != null) {
			return this.sourced.tryAcquireSourcedAsync(Throttler.normalizeKey(key), cost)
				.thenApply((answer) -> notify(key, answer.decision(), answer.source(), System.nanoTime() - start));
		}
		return this.limiter.tryAcquireAsync(Throttler.normalizeKey(key), cost)
			.thenApply((decision) -> notify(key, decision, this.storeSource, System.nanoTime() - start));
	}

	/**
	 * Gives back what an allowed call took (see {@link Limiter#refund}). A cost below 1 gives
	 * back nothing.
	 * @param key the key
	 * @param cost units to give back
	 */
	public void refund(@Nullable String key, int cost) {
		if (cost >= 1) {
			// no call ever took more than maxCost, and a refund never goes past neutral anyway
			this.limiter.refund(Throttler.normalizeKey(key), Math.min(cost, this.policy.maxCost()));
		}
	}

	/**
	 * Like {@link #refund}, without blocking the calling thread.
	 * @param key the key
	 * @param cost units to give back
	 * @return completes when done
	 */
	public CompletionStage<Void> refundAsync(@Nullable String key, int cost) {
		if (cost < 1) {
			return CompletableFuture.completedFuture(null);
		}
		return this.limiter.refundAsync(Throttler.normalizeKey(key), Math.min(cost, this.policy.maxCost()));
	}

	/**
	 * Gives back exactly what one allowed call took, identified by the decision it got (see
	 * {@link Limiter#refund(String, int, long)}): nothing once that is gone.
	 * @param key the key the call used
	 * @param cost units the call took
	 * @param taken the call's (allowed) decision
	 */
	public void refund(@Nullable String key, int cost, Decision taken) {
		if (cost >= 1) {
			this.limiter.refund(Throttler.normalizeKey(key), Math.min(cost, this.policy.maxCost()), taken.receipt());
		}
	}

	/**
	 * Like {@link #refund(String, int, Decision)}, without blocking the calling thread.
	 * @param key the key the call used
	 * @param cost units the call took
	 * @param taken the call's (allowed) decision
	 * @return completes when done
	 */
	public CompletionStage<Void> refundAsync(@Nullable String key, int cost, Decision taken) {
		if (cost < 1) {
			return CompletableFuture.completedFuture(null);
		}
		return this.limiter.refundAsync(Throttler.normalizeKey(key), Math.min(cost, this.policy.maxCost()),
				taken.receipt());
	}

	/**
	 * Returns what a call of cost 1 would be told, without changing state.
	 * @param key the key
	 * @return the decision a call would get now
	 */
	public Decision peek(@Nullable String key) {
		return this.limiter.peek(Throttler.normalizeKey(key));
	}

	/**
	 * Forgets {@code key}'s state (unlocks a user), saying whether the store did (see
	 * {@link Limiter#tryReset}): with a failure policy, false when the store could not be reached, so
	 * that the key is forgotten only in the fallback for now and the store is reset when it answers
	 * again. Never throws because of a failure policy's store; a store without one throws its
	 * failure.
	 * @param key the key
	 * @return true when the store forgot the key; false when it could not be reached
	 */
	public boolean reset(@Nullable String key) {
		return this.limiter.tryReset(Throttler.normalizeKey(key));
	}

	/**
	 * Like {@link #reset}, without blocking the calling thread.
	 * @param key the key
	 * @return completes when done
	 */
	public CompletionStage<Void> resetAsync(@Nullable String key) {
		return this.limiter.resetAsync(Throttler.normalizeKey(key));
	}

	private static void checkCost(int cost) {
		if (cost < 1) {
			throw new IllegalArgumentException("cost must be at least 1, was " + cost);
		}
	}

	private Decision notify(@Nullable String key, Decision decision, DecisionSource source, long storeNanos) {
		for (ThrottleListener listener : this.listeners) {
			listener.onDecision(this.policy, decision, source, storeNanos);
			if (!decision.allowed()) {
				listener.onRejected(this.policy, key, decision);
			}
		}
		return decision;
	}

}
