package dev.throttle.spring.metrics;

import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;

import dev.throttle.Decision;
import dev.throttle.DecisionSource;
import dev.throttle.Policy;
import dev.throttle.ThrottleListener;

/**
 * Records decisions as Micrometer meters, in every registry it is bound to:
 * <ul>
 * <li>{@code throttle.decisions} (counter), tagged {@code policy}, {@code store} (who decided:
 * {@code memory}, {@code redis}, or {@code local} when the local failure mode did) and {@code outcome}:
 * {@code allowed} or {@code rejected} when a store decided, {@code error} when no store could and a
 * failure mode's fixed answer ({@code open}, {@code closed}) stood in. Each decision is counted once,
 * under one outcome;</li>
 * <li>{@code throttle.store.latency} (timer), tagged {@code policy} and {@code store}: how long the
 * decision took in the store, failing included.</li>
 * </ul>
 * A refund or reset that failed is not a decision and is not counted here (listeners hear it as
 * {@link ThrottleListener#onStoreError}). Tags are bounded: policy names come from configuration,
 * never from callers, and no key is ever a tag.
 *
 * <p>A {@link MeterBinder}: Spring Boot binds it to the application's registry once that registry is
 * configured. Meters are made when a policy and store first decide, and looked up once; a decision
 * made before binding is counted nowhere. Thread-safe.
 */
public final class MicrometerThrottleListener implements ThrottleListener, MeterBinder {

	/** The decisions counter's name. */
	public static final String DECISIONS = "throttle.decisions";

	/** The store latency timer's name. */
	public static final String LATENCY = "throttle.store.latency";

	/** Forwards to every registry bound so far, including the ones bound after a meter was made. */
	private final CompositeMeterRegistry registry = new CompositeMeterRegistry();

	private final Map<String, PolicyMeters> meters = new ConcurrentHashMap<>();

	@Override
	public void bindTo(MeterRegistry registry) {
		this.registry.add(registry);
	}

	@Override
	public void onDecision(Policy policy, Decision decision, DecisionSource source, long storeNanos) {
		PolicyMeters policyMeters = this.meters.get(policy.name());
		if (policyMeters == null) {
			policyMeters = this.meters.computeIfAbsent(policy.name(), PolicyMeters::new);
		}
		StoreMeters meters = policyMeters.of(source.store());
		(source.isFailureMode() ? meters.error : decision.allowed() ? meters.allowed : meters.rejected).increment();
		meters.latency.record(storeNanos, TimeUnit.NANOSECONDS);
	}

	/** One policy's meters, by the store that decided: one or two stores, looked up without hashing. */
	private final class PolicyMeters {

		private final String policy;

		private final AtomicReference<StoreMeters[]> stores = new AtomicReference<>(new StoreMeters[0]);

		PolicyMeters(String policy) {
			this.policy = policy;
		}

		StoreMeters of(String store) {
			for (;;) {
				StoreMeters[] known = this.stores.get();
				for (StoreMeters meters : known) {
					// store names are the constants of a few DecisionSources: the same String instance
					if (meters.store == store || meters.store.equals(store)) {
						return meters;
					}
				}
				StoreMeters[] more = Arrays.copyOf(known, known.length + 1);
				more[known.length] = new StoreMeters(this.policy, store);
				if (this.stores.compareAndSet(known, more)) {
					return more[known.length];
				}
			}
		}

	}

	/** A policy's meters for one store. Registering a meter twice returns the first, so a race is harmless. */
	private final class StoreMeters {

		private final String store;

		private final Counter allowed;

		private final Counter rejected;

		private final Counter error;

		private final Timer latency;

		StoreMeters(String policy, String store) {
			this.store = store;
			this.allowed = counter(policy, store, "allowed");
			this.rejected = counter(policy, store, "rejected");
			this.error = counter(policy, store, "error");
			this.latency = Timer.builder(LATENCY)
				.description("Time the throttle store took to decide")
				.tag("policy", policy)
				.tag("store", store)
				.register(MicrometerThrottleListener.this.registry);
		}

		private Counter counter(String policy, String store, String outcome) {
			return Counter.builder(DECISIONS)
				.description("Throttling decisions")
				.tag("policy", policy)
				.tag("outcome", outcome)
				.tag("store", store)
				.register(MicrometerThrottleListener.this.registry);
		}

	}

}
