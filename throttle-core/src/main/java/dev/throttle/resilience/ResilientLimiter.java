package dev.throttle.resilience;

import java.lang.System.Logger.Level;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

import dev.throttle.Decision;
import dev.throttle.DecisionSource;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.SourcedDecision;
import dev.throttle.SourcedLimiter;
import dev.throttle.ThrottleListener;

/**
 * One policy of a {@link ResilientThrottleStore}: each call goes to the store unless the store is
 * known to be down; a call the store fails, or one made while it is down, is reported to the
 * listener and answered by the fallback instead. {@link #call} and {@link #callAsync} are the one
 * place that knows whether an operation reached the store.
 */
final class ResilientLimiter implements SourcedLimiter {

	private static final System.Logger logger = System.getLogger(ResilientThrottleStore.class.getName());

	private final Policy policy;

	private final Limiter store;

	private final DecisionSource storeSource;

	private final Fallback fallback;

	private final StoreHealth health;

	private final ThrottleListener listener;

	ResilientLimiter(Policy policy, Limiter store, DecisionSource storeSource, Fallback fallback, StoreHealth health,
			ThrottleListener listener) {
		this.policy = policy;
		this.store = store;
		this.storeSource = storeSource;
		this.fallback = fallback;
		this.health = health;
		this.listener = listener;
	}

	@Override
	public Policy policy() {
		return this.policy;
	}

	@Override
	public Decision tryAcquire(String key, int cost) {
		return call(key, () -> this.store.tryAcquire(key, cost), () -> this.fallback.tryAcquire(key, cost).decision());
	}

	@Override
	public SourcedDecision tryAcquireSourced(String key, int cost) {
		return call(key, () -> new SourcedDecision(this.store.tryAcquire(key, cost), this.storeSource),
				() -> this.fallback.tryAcquire(key, cost));
	}

	@Override
	public void refund(String key, int cost) {
		call(key, () -> {
			this.store.refund(key, cost);
			return null;
		}, () -> {
			this.fallback.refund(key, cost);
			return null;
		});
	}

	/** The receipt goes to the store, so that the refund undoes exactly the call it took. */
	@Override
	public void refund(String key, int cost, long receipt) {
		call(key, () -> {
			this.store.refund(key, cost, receipt);
			return null;
		}, () -> {
			this.fallback.refund(key, cost);
			return null;
		});
	}

	@Override
	public Decision peek(String key) {
		return call(key, () -> this.store.peek(key), () -> this.fallback.peek(key));
	}

	/**
	 * Forgets the key in the fallback too, first: a user unlocked while the store answers must not be
	 * locked again by stale local state in a later outage.
	 */
	@Override
	public void reset(String key) {
		this.fallback.reset(key);
		call(key, () -> {
			this.store.reset(key);
			return null;
		}, () -> null);
	}

	@Override
	public CompletionStage<Decision> tryAcquireAsync(String key, int cost) {
		return callAsync(key, () -> this.store.tryAcquireAsync(key, cost),
				() -> this.fallback.tryAcquire(key, cost).decision());
	}

	@Override
	public CompletionStage<SourcedDecision> tryAcquireSourcedAsync(String key, int cost) {
		return callAsync(key,
				() -> this.store.tryAcquireAsync(key, cost)
					.thenApply((decision) -> new SourcedDecision(decision, this.storeSource)),
				() -> this.fallback.tryAcquire(key, cost));
	}

	@Override
	public CompletionStage<Void> refundAsync(String key, int cost) {
		return callAsync(key, () -> this.store.refundAsync(key, cost), () -> {
			this.fallback.refund(key, cost);
			return null;
		});
	}

	@Override
	public CompletionStage<Void> refundAsync(String key, int cost, long receipt) {
		return callAsync(key, () -> this.store.refundAsync(key, cost, receipt), () -> {
			this.fallback.refund(key, cost);
			return null;
		});
	}

	@Override
	public CompletionStage<Decision> peekAsync(String key) {
		return callAsync(key, () -> this.store.peekAsync(key), () -> this.fallback.peek(key));
	}

	@Override
	public CompletionStage<Void> resetAsync(String key) {
		this.fallback.reset(key);
		return callAsync(key, () -> this.store.resetAsync(key), () -> null);
	}

	private <T> T call(String key, Supplier<T> store, Supplier<T> fallback) {
		RuntimeException error = skipStore(key);
		if (error == null) {
			try {
				return store.get();
			}
			catch (RuntimeException ex) {
				error = failed(ex);
			}
		}
		return answerInstead(error, fallback);
	}

	private <T> CompletionStage<T> callAsync(String key, Supplier<CompletionStage<T>> store, Supplier<T> fallback) {
		RuntimeException error = skipStore(key);
		if (error == null) {
			try {
				return store.get()
					.handle((result, failure) -> (failure == null) ? result
							: answerInstead(failed(unwrap(failure)), fallback));
			}
			catch (RuntimeException ex) {
				error = failed(ex);
			}
		}
		return CompletableFuture.completedFuture(answerInstead(error, fallback));
	}

	/**
	 * Returns null when the store is to be asked; otherwise, the store being known to be down, what to
	 * report, and starts a probe so that the outage ends as soon as the store answers.
	 */
	private RuntimeException skipStore(String key) {
		if (!this.health.isDown()) {
			return null;
		}
		this.health.probe(this.store, key);
		return this.health.unavailable();
	}

	private RuntimeException failed(RuntimeException error) {
		this.health.failed(error);
		return error;
	}

	private <T> T answerInstead(RuntimeException error, Supplier<T> fallback) {
		try {
			this.listener.onStoreError(this.policy, error);
		}
		catch (RuntimeException ex) {
			// a listener's failure must not turn an answered call into a failed one
			logger.log(Level.DEBUG, "ThrottleListener.onStoreError threw", ex);
		}
		return fallback.get();
	}

	private static RuntimeException unwrap(Throwable error) {
		Throwable cause = (error instanceof CompletionException && error.getCause() != null) ? error.getCause() : error;
		if (cause instanceof RuntimeException runtime) {
			return runtime;
		}
		return (error instanceof RuntimeException runtime) ? runtime : new CompletionException(error);
	}

}
