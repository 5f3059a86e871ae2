package dev.throttle.resilience;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import dev.throttle.Decision;
import dev.throttle.Limiter;

/**
 * Whether one store is in an outage, shared by all the limiters of a {@link ResilientThrottleStore}:
 * the first failure starts an outage and logs one WARN; while it lasts, calls start a read-only probe
 * of the store in the background, one at a time; the first probe that succeeds ends it with one
 * INFO. Lock-free.
 */
final class StoreHealth {

	/** A probe whose store never answers is given up, so that a later call can start another. */
	private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(10);

	private static final System.Logger logger = System.getLogger(ResilientThrottleStore.class.getName());

	private final String store;

	private final String mode;

	/** The current outage, or null while the store answers. */
	private final AtomicReference<Outage> outage = new AtomicReference<>();

	/** Whether a probe of the store is running. */
	private final AtomicBoolean probing = new AtomicBoolean();

	StoreHealth(String store, String mode) {
		this.store = store;
		this.mode = mode;
	}

	boolean isDown() {
		return this.outage.get() != null;
	}

	/**
	 * Returns what to report for a call answered without trying the store.
	 */
	StoreUnavailableException unavailable() {
		Outage current = this.outage.get();
		return (current != null) ? current.unavailable()
				: new StoreUnavailableException("throttle store '" + this.store + "' is down", null);
	}

	/**
	 * Starts an outage unless one is in progress. The message is the store's own, which names no key
	 * (the Redis store's says what failed and for which policy).
	 */
	void failed(RuntimeException error) {
		if (this.outage.get() == null) {
			Outage started = new Outage(System.nanoTime(), new StoreUnavailableException(
					"throttle store '" + this.store + "' is down; failure-mode " + this.mode + " applies", error));
			if (this.outage.compareAndSet(null, started)) {
				logger.log(Level.WARNING, "Throttle store '" + this.store + "' failed (" + error.getMessage()
						+ "); failure-mode " + this.mode + " applies until it answers again");
			}
		}
	}

	/**
	 * Starts a read-only probe of the store with {@code key} unless one is running; never waits for
	 * it. The probe is the store's own non-blocking peek, so it is bounded as the store bounds its
	 * calls (and by {@link #PROBE_TIMEOUT} at most).
	 */
	void probe(Limiter store, String key) {
		if (!this.probing.compareAndSet(false, true)) {
			return;
		}
		CompletionStage<Decision> probe;
		try {
			probe = store.peekAsync(key);
		}
		catch (RuntimeException ex) {
			this.probing.set(false);
			return;
		}
		CompletableFuture<Decision> bounded = new CompletableFuture<>();
		probe.whenComplete((decision, error) -> {
			if (error == null) {
				bounded.complete(decision);
			}
			else {
				bounded.completeExceptionally(error);
			}
		});
		bounded.orTimeout(PROBE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).whenComplete((decision, error) -> {
			this.probing.set(false);
			if (error == null) {
				recovered();
			}
		});
	}

	private void recovered() {
		Outage ended = this.outage.getAndSet(null);
		if (ended != null) {
			logger.log(Level.INFO, "Throttle store '" + this.store + "' answers again after "
					+ Duration.ofNanos(System.nanoTime() - ended.startNanos()).toMillis() + " ms; decisions use it again");
		}
	}

	private record Outage(long startNanos, StoreUnavailableException unavailable) {
	}

}
