package dev.throttle.spring.redis;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.ThrottleStore;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;

/**
 * A shared store (Redis) with a failure policy: while the store cannot answer, calls are answered
 * by the {@link FailureMode} instead of failing. No call ever throws because of the store; how long
 * a call may wait is the wrapped store's own bound ({@link RedisThrottleStore#timeout()}).
 *
 * <p>Outages: the first failure starts an outage and logs one WARN. While it lasts, every call is
 * answered by the failure mode at once, without waiting for the store, and starts a probe in the
 * background unless one is already running: a read-only {@code peek} of the call's key, bounded by
 * the store's timeout. The first probe that succeeds ends the outage with one INFO, and every call
 * after it uses the store again, with no restart. Every call the failure mode answered is reported
 * to the {@link StoreFailureListener} (for {@code outcome=error} metrics).
 *
 * <p>{@link FailureMode#LOCAL} keeps a bounded memory store on this instance: during an outage each
 * instance enforces the policy on its own traffic; its state is not merged back into Redis. A reset
 * clears both, so a user unlocked during normal operation is not locked again by stale local state
 * in a later outage.
 *
 * <p>Thread-safe and lock-free.
 */
public final class ResilientThrottleStore implements ThrottleStore {

	/** The Retry-After of a call refused by {@link FailureMode#CLOSED}. */
	public static final Duration CLOSED_RETRY_AFTER = Duration.ofSeconds(1);

	private static final Log logger = LogFactory.getLog(ResilientThrottleStore.class);

	private final ThrottleStore primary;

	private final FailureMode mode;

	private final ThrottleStore local;

	private final StoreFailureListener listener;

	private final Map<String, ResilientLimiter> limiters = new ConcurrentHashMap<>();

	/** The current outage, or null while the store answers. */
	private final AtomicReference<Outage> outage = new AtomicReference<>();

	/** Whether a probe of the store is running during an outage. */
	private final AtomicBoolean probing = new AtomicBoolean();

	/**
	 * Wraps {@code primary}.
	 * @param primary the shared store, typically a {@link RedisThrottleStore}
	 * @param mode what to do while it cannot answer
	 * @param local the store that decides in {@link FailureMode#LOCAL} (a bounded
	 * {@link MemoryThrottleStore}); ignored, and may be null, for the other modes
	 * @param listener hears every call the failure mode answered; null for none
	 */
	public ResilientThrottleStore(ThrottleStore primary, FailureMode mode, ThrottleStore local,
			StoreFailureListener listener) {
		if (primary == null || mode == null) {
			throw new IllegalArgumentException("primary store and failure mode are required");
		}
		if (mode == FailureMode.LOCAL && local == null) {
			throw new IllegalArgumentException("failure-mode local needs a local store");
		}
		this.primary = primary;
		this.mode = mode;
		this.local = (mode == FailureMode.LOCAL) ? local : null;
		this.listener = (listener != null) ? listener : StoreFailureListener.NONE;
	}

	/**
	 * Wraps {@code primary}, creating the local store for {@link FailureMode#LOCAL} on the system clock.
	 * @param primary the shared store
	 * @param mode what to do while it cannot answer
	 * @param localMaximumKeys the local store's bound per policy (as
	 * {@code throttle.store.memory.maximum-keys}); used by {@link FailureMode#LOCAL} only
	 * @param listener hears every call the failure mode answered; null for none
	 * @return the wrapped store
	 */
	public static ResilientThrottleStore of(ThrottleStore primary, FailureMode mode, long localMaximumKeys,
			StoreFailureListener listener) {
		ThrottleStore local = (mode == FailureMode.LOCAL)
				? new MemoryThrottleStore(TimeSource.system(), localMaximumKeys) : null;
		return new ResilientThrottleStore(primary, mode, local, listener);
	}

	@Override
	public Limiter limiter(Policy policy) {
		ResilientLimiter limiter = this.limiters.computeIfAbsent(policy.name(), (name) -> new ResilientLimiter(policy));
		if (!limiter.policy().equals(policy)) {
			throw new IllegalArgumentException(
					"policy '" + policy.name() + "' is already bound with other settings: " + limiter.policy());
		}
		return limiter;
	}

	/**
	 * Returns the wrapped store's kind: the failure mode is not a store of its own.
	 */
	@Override
	public String kind() {
		return this.primary.kind();
	}

	/**
	 * Returns the failure mode.
	 * @return the mode
	 */
	public FailureMode failureMode() {
		return this.mode;
	}

	/**
	 * Returns whether an outage is in progress: the last call to the store failed and no probe has
	 * succeeded since.
	 * @return whether the store is considered down
	 */
	public boolean isStoreDown() {
		return this.outage.get() != null;
	}

	@Override
	public void close() {
		try {
			this.primary.close();
		}
		finally {
			if (this.local != null) {
				this.local.close();
			}
		}
	}

	private void recovered() {
		Outage ended = this.outage.getAndSet(null);
		if (ended != null) {
			logger.info("Throttle store '" + this.primary.kind() + "' answers again after "
					+ Duration.ofNanos(System.nanoTime() - ended.startNanos()).toMillis()
					+ " ms; decisions use it again");
		}
	}

	private void failed(RuntimeException error) {
		if (this.outage.get() == null) {
			Outage started = new Outage(System.nanoTime(), new StoreUnavailableException(
					"throttle store '" + this.primary.kind() + "' is down; failure-mode " + mode() + " applies", error));
			if (this.outage.compareAndSet(null, started)) {
				logger.warn("Throttle store '" + this.primary.kind() + "' failed (" + error.getMessage()
						+ "); failure-mode " + mode() + " applies until it answers again");
			}
		}
	}

	private String mode() {
		return this.mode.name().toLowerCase(java.util.Locale.ROOT);
	}

	private RuntimeException unavailable() {
		Outage current = this.outage.get();
		return (current != null) ? current.unavailable()
				: new StoreUnavailableException("throttle store '" + this.primary.kind() + "' is down", null);
	}

	private static RuntimeException unwrap(Throwable error) {
		Throwable cause = (error instanceof CompletionException && error.getCause() != null) ? error.getCause() : error;
		return (cause instanceof RuntimeException runtime) ? runtime
				: new RedisStoreException("throttle store failed: " + cause, cause);
	}

	private record Outage(long startNanos, StoreUnavailableException unavailable) {
	}

	private final class ResilientLimiter implements Limiter {

		private final Policy policy;

		private final Limiter primary;

		private final Limiter local;

		private final Decision openDecision;

		private final Decision closedDecision;

		ResilientLimiter(Policy policy) {
			this.policy = policy;
			this.primary = ResilientThrottleStore.this.primary.limiter(policy);
			this.local = (ResilientThrottleStore.this.local != null) ? ResilientThrottleStore.this.local.limiter(policy)
					: null;
			this.openDecision = Decision.allow(policy.quota(), policy.quota(), 0);
			long retry = CLOSED_RETRY_AFTER.toMillis();
			this.closedDecision = Decision.reject(policy.quota(), 0, retry, retry);
		}

		@Override
		public Policy policy() {
			return this.policy;
		}

		@Override
		public Decision tryAcquire(String key, int cost) {
			return call("tryAcquire", key, () -> this.primary.tryAcquire(key, cost), () -> fallbackAcquire(key, cost));
		}

		@Override
		public void refund(String key, int cost) {
			call("refund", key, () -> {
				this.primary.refund(key, cost);
				return null;
			}, () -> {
				if (this.local != null) {
					this.local.refund(key, cost);
				}
				return null;
			});
		}

		@Override
		public Decision peek(String key) {
			return call("peek", key, () -> this.primary.peek(key), () -> fallbackPeek(key));
		}

		@Override
		public void reset(String key) {
			if (this.local != null) {
				this.local.reset(key);
			}
			call("reset", key, () -> {
				this.primary.reset(key);
				return null;
			}, () -> null);
		}

		@Override
		public CompletionStage<Decision> tryAcquireAsync(String key, int cost) {
			return callAsync("tryAcquire", key, () -> this.primary.tryAcquireAsync(key, cost),
					() -> fallbackAcquire(key, cost));
		}

		@Override
		public CompletionStage<Void> refundAsync(String key, int cost) {
			return callAsync("refund", key, () -> this.primary.refundAsync(key, cost), () -> {
				if (this.local != null) {
					this.local.refund(key, cost);
				}
				return null;
			});
		}

		@Override
		public CompletionStage<Void> resetAsync(String key) {
			if (this.local != null) {
				this.local.reset(key);
			}
			return callAsync("reset", key, () -> this.primary.resetAsync(key), () -> null);
		}

		private Decision fallbackAcquire(String key, int cost) {
			return switch (ResilientThrottleStore.this.mode) {
				case OPEN -> this.openDecision;
				case CLOSED -> this.closedDecision;
				case LOCAL -> this.local.tryAcquire(key, cost);
			};
		}

		private Decision fallbackPeek(String key) {
			return switch (ResilientThrottleStore.this.mode) {
				case OPEN -> this.openDecision;
				case CLOSED -> this.closedDecision;
				case LOCAL -> this.local.peek(key);
			};
		}

		private <T> T call(String operation, String key, Supplier<T> store, Supplier<T> fallback) {
			if (isStoreDown()) {
				probe(key);
				report(operation, unavailable());
				return fallback.get();
			}
			try {
				return store.get();
			}
			catch (RuntimeException ex) {
				failed(ex);
				report(operation, ex);
				return fallback.get();
			}
		}

		private <T> CompletionStage<T> callAsync(String operation, String key, Supplier<CompletionStage<T>> store,
				Supplier<T> fallback) {
			if (isStoreDown()) {
				probe(key);
				report(operation, unavailable());
				return CompletableFuture.completedFuture(fallback.get());
			}
			CompletionStage<T> pending;
			try {
				pending = store.get();
			}
			catch (RuntimeException ex) {
				failed(ex);
				report(operation, ex);
				return CompletableFuture.completedFuture(fallback.get());
			}
			return pending.handle((result, error) -> {
				if (error == null) {
					return result;
				}
				RuntimeException failure = unwrap(error);
				failed(failure);
				report(operation, failure);
				return fallback.get();
			});
		}

		/** Starts a read-only probe of the store unless one is running; never waits for it. */
		private void probe(String key) {
			if (!ResilientThrottleStore.this.probing.compareAndSet(false, true)) {
				return;
			}
			CompletionStage<Decision> probe;
			try {
				probe = (this.primary instanceof RedisLimiter redis) ? redis.peekAsync(key)
						: CompletableFuture.supplyAsync(() -> this.primary.peek(key));
			}
			catch (RuntimeException ex) {
				ResilientThrottleStore.this.probing.set(false);
				return;
			}
			probe.whenComplete((decision, error) -> {
				ResilientThrottleStore.this.probing.set(false);
				if (error == null) {
					recovered();
				}
			});
		}

		private void report(String operation, RuntimeException error) {
			try {
				ResilientThrottleStore.this.listener.onFailure(this.policy, operation, error);
			}
			catch (RuntimeException ex) {
				logger.debug("StoreFailureListener threw", ex);
			}
		}

	}

}
