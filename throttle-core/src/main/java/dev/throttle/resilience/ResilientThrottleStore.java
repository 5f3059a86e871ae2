package dev.throttle.resilience;

import java.time.Duration;
import java.util.Locale;

import dev.throttle.DecisionSource;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.ThrottleListener;
import dev.throttle.ThrottleStore;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;

/**
 * Any {@link ThrottleStore} with a failure policy: while the store cannot answer, calls are answered
 * by the {@link FailureMode} instead of failing. No call ever throws because of the store; how long
 * a call may wait is the wrapped store's own bound (the Redis store's timeout, say). It speaks only
 * the store SPI, so a store added later gets the same failure modes by being wrapped.
 *
 * <p>Outages: the first failure starts an outage and logs one WARN. While it lasts, every call is
 * answered by the failure mode at once, without waiting for the store, and starts a probe in the
 * background unless one is already running: a read-only {@link Limiter#peekAsync peekAsync} of the
 * call's key. The first probe that succeeds ends the outage with one INFO, and every call after it
 * uses the store again, with no restart.
 *
 * <p>Reports: every operation that the store did not carry out (a decision, peek, refund or reset)
 * is reported to the listener the policy was bound with ({@link #limiter(Policy, ThrottleListener)},
 * as a {@link dev.throttle.Throttler} binds it) as {@link ThrottleListener#onStoreError}. Limiters
 * are {@link dev.throttle.SourcedLimiter}s: each decision says whether the store, the local store or
 * a fixed answer of the failure mode made it.
 *
 * <p>{@link FailureMode#LOCAL} keeps a bounded memory store on this instance: during an outage each
 * instance enforces the policy on its own traffic; its state is not merged back into the store. A
 * reset clears both, so a user unlocked during normal operation is not locked again by stale local
 * state in a later outage.
 *
 * <p>Thread-safe and lock-free.
 */
public final class ResilientThrottleStore implements ThrottleStore {

	/** The Retry-After of a call refused by {@link FailureMode#CLOSED}. */
	public static final Duration CLOSED_RETRY_AFTER = Duration.ofSeconds(1);

	/** The listener of limiters bound without one. */
	private static final ThrottleListener NO_LISTENER = new ThrottleListener() {
	};

	private final ThrottleStore primary;

	private final FailureMode mode;

	private final ThrottleStore local;

	private final DecisionSource storeSource;

	private final Fallback.Sources fallbackSources;

	private final StoreHealth health;

	/**
	 * Wraps {@code primary}.
	 * @param primary the store that decides while it can, such as the Redis store
	 * @param mode what to answer while it cannot
	 * @param local the store that decides in {@link FailureMode#LOCAL} (a bounded
	 * {@link MemoryThrottleStore}); ignored, and may be null, for the other modes
	 * @throws IllegalArgumentException when {@code primary} or {@code mode} is null, or
	 * {@code local} is null in {@link FailureMode#LOCAL}
	 */
	public ResilientThrottleStore(ThrottleStore primary, FailureMode mode, ThrottleStore local) {
		if (primary == null || mode == null) {
			throw new IllegalArgumentException("primary store and failure mode are required");
		}
		if (mode == FailureMode.LOCAL && local == null) {
			throw new IllegalArgumentException("failure-mode local needs a local store");
		}
		this.primary = primary;
		this.mode = mode;
		this.local = (mode == FailureMode.LOCAL) ? local : null;
		this.storeSource = DecisionSource.store(primary.kind());
		this.fallbackSources = Fallback.Sources.of(primary.kind());
		this.health = new StoreHealth(primary.kind(), mode.name().toLowerCase(Locale.ROOT));
	}

	/**
	 * Wraps {@code primary}, creating the local store for {@link FailureMode#LOCAL} on the system clock.
	 * @param primary the store that decides while it can
	 * @param mode what to answer while it cannot
	 * @param localMaximumKeys the local store's bound per policy (as
	 * {@code throttle.store.memory.maximum-keys}); used by {@link FailureMode#LOCAL} only
	 * @return the wrapped store
	 */
	public static ResilientThrottleStore of(ThrottleStore primary, FailureMode mode, long localMaximumKeys) {
		ThrottleStore local = (mode == FailureMode.LOCAL)
				? new MemoryThrottleStore(TimeSource.system(), localMaximumKeys) : null;
		return new ResilientThrottleStore(primary, mode, local);
	}

	/**
	 * Binds {@code policy} with no listener: store errors are not reported.
	 */
	@Override
	public Limiter limiter(Policy policy) {
		return limiter(policy, NO_LISTENER);
	}

	/**
	 * Binds {@code policy}; every operation of the limiter that the store does not carry out is
	 * reported to {@code listener}. State lives in the wrapped stores, so every limiter of one policy
	 * works on the same state.
	 */
	@Override
	public Limiter limiter(Policy policy, ThrottleListener listener) {
		Limiter local = (this.local != null) ? this.local.limiter(policy) : null;
		return new ResilientLimiter(policy, this.primary.limiter(policy), this.storeSource,
				Fallback.of(this.mode, policy, local, this.fallbackSources), this.health,
				(listener != null) ? listener : NO_LISTENER);
	}

	/**
	 * Returns the wrapped store's kind: the failure mode is not a store of its own.
	 */
	@Override
	public String kind() {
		return this.primary.kind();
	}

	/**
	 * Returns whether the wrapped store never blocks: the failure modes never do.
	 */
	@Override
	public boolean isNonBlocking() {
		return this.primary.isNonBlocking();
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
		return this.health.isDown();
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

}
