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
 * <p>Outages: a failure that is not a timeout (the store refused, or answered with an error), or the
 * third call in a row that got no answer in time, starts an outage and logs one WARN; a call that
 * got no answer in time is answered by the failure mode either way. A failure counts as a timeout
 * when a {@link java.util.concurrent.TimeoutException} is among its causes. While an outage lasts,
 * every call is answered by the failure mode at once, without waiting for the store, and starts a
 * probe in the background unless one is already running: a read-only
 * {@link Limiter#peekAsync peekAsync} of the call's key. The first probe that succeeds applies what
 * the store is owed (below), then ends the outage with one INFO, and every call after it uses the
 * store again, with no restart.
 *
 * <p>Settlements: a refund goes to whoever took the unit, told by the receipt of the call's decision
 * ({@link Limiter#refund(String, int, long)}): a unit the fallback allowed (during an outage) goes
 * back to the fallback, whenever it is refunded; a unit the store took goes back to the store. A
 * refund or a reset that the store is owed and cannot be given now (down, or failing the call) is
 * kept and applied to the store when it answers again, before it decides again, in the order made;
 * kept in memory, at most 10,000 per policy (the oldest dropped first), and dropped once older than
 * the policy's {@link Policy#idleExpiry()}, when the state it settles has expired anyway. A refund
 * whose call was sent but got no answer in time is not sent again (the store may have applied it,
 * and applied twice it would give back a unit nobody returned); a reset is. {@link Limiter#tryReset}
 * says whether the store was reached. A store's own receipts must stay below 2^62: the bit above
 * marks the fallback's.
 *
 * <p>{@link FailureMode#LOCAL} keeps a bounded memory store on this instance: during an outage each
 * instance enforces the policy on its own traffic; its state is not merged back into the store. A
 * reset clears both, so a user unlocked during normal operation is not locked again by stale local
 * state in a later outage, and one unlocked during an outage is unlocked on this instance at once.
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

	private final Settlements settlements;

	/**
	 * Wraps {@code primary}; the age of what the store is owed is read on the system clock.
	 * @param primary the store that decides while it can, such as the Redis store
	 * @param mode what to answer while it cannot
	 * @param local the store that decides in {@link FailureMode#LOCAL} (a bounded
	 * {@link MemoryThrottleStore}); ignored, and may be null, for the other modes
	 * @throws IllegalArgumentException when {@code primary} or {@code mode} is null, or
	 * {@code local} is null in {@link FailureMode#LOCAL}
	 */
	public ResilientThrottleStore(ThrottleStore primary, FailureMode mode, ThrottleStore local) {
		this(primary, mode, local, TimeSource.system());
	}

	/**
	 * Wraps {@code primary}.
	 * @param primary the store that decides while it can, such as the Redis store
	 * @param mode what to answer while it cannot
	 * @param local the store that decides in {@link FailureMode#LOCAL} (a bounded
	 * {@link MemoryThrottleStore}); ignored, and may be null, for the other modes
	 * @param clock the clock that tells when what the store is owed has expired (the application's
	 * time source)
	 * @throws IllegalArgumentException when {@code primary}, {@code mode} or {@code clock} is null, or
	 * {@code local} is null in {@link FailureMode#LOCAL}
	 */
	public ResilientThrottleStore(ThrottleStore primary, FailureMode mode, ThrottleStore local, TimeSource clock) {
		if (primary == null || mode == null || clock == null) {
			throw new IllegalArgumentException("primary store, failure mode and clock are required");
		}
		if (mode == FailureMode.LOCAL && local == null) {
			throw new IllegalArgumentException("failure-mode local needs a local store");
		}
		this.primary = primary;
		this.mode = mode;
		this.local = (mode == FailureMode.LOCAL) ? local : null;
		this.storeSource = DecisionSource.store(primary.kind());
		this.fallbackSources = Fallback.Sources.of(primary.kind());
		this.settlements = new Settlements(primary.kind(), clock);
		this.health = new StoreHealth(primary.kind(), mode.name().toLowerCase(Locale.ROOT), this.settlements);
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
				Fallback.of(this.mode, policy, local, this.fallbackSources), this.health, this.settlements,
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
