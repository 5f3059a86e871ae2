package dev.throttle.spring.metrics;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import dev.throttle.Decision;
import dev.throttle.Policy;
import dev.throttle.ThrottleListener;

/**
 * Records decisions as Micrometer meters:
 * <ul>
 * <li>{@code throttle.decisions} (counter), tagged {@code policy}, {@code outcome}
 * ({@code allowed}, {@code rejected} or {@code error}: a store failure, decided by the failure mode,
 * whose decision is counted too) and {@code store};</li>
 * <li>{@code throttle.store.latency} (timer), tagged {@code policy} and {@code store}.</li>
 * </ul>
 * Tags are bounded: policy names come from configuration, never from callers. No key is ever a tag.
 * Meters are looked up once per policy and cached. Thread-safe.
 */
public final class MicrometerThrottleListener implements ThrottleListener {

	/** The decisions counter's name. */
	public static final String DECISIONS = "throttle.decisions";

	/** The store latency timer's name. */
	public static final String LATENCY = "throttle.store.latency";

	private final MeterRegistry registry;

	private final String store;

	private final Map<String, PolicyMeters> meters = new ConcurrentHashMap<>();

	/**
	 * Creates a listener.
	 * @param registry where meters go
	 * @param store the store's kind, for the {@code store} tag
	 */
	public MicrometerThrottleListener(MeterRegistry registry, String store) {
		this.registry = registry;
		this.store = store;
	}

	@Override
	public void onDecision(Policy policy, Decision decision, long storeNanos) {
		PolicyMeters meters = meters(policy);
		(decision.allowed() ? meters.allowed : meters.rejected).increment();
		meters.latency.record(storeNanos, TimeUnit.NANOSECONDS);
	}

	@Override
	public void onStoreError(Policy policy, RuntimeException error) {
		meters(policy).error.increment();
	}

	private PolicyMeters meters(Policy policy) {
		return this.meters.computeIfAbsent(policy.name(), this::create);
	}

	private PolicyMeters create(String policy) {
		return new PolicyMeters(counter(policy, "allowed"), counter(policy, "rejected"), counter(policy, "error"),
				Timer.builder(LATENCY)
					.description("Time the throttle store took to decide")
					.tag("policy", policy)
					.tag("store", this.store)
					.register(this.registry));
	}

	private Counter counter(String policy, String outcome) {
		return Counter.builder(DECISIONS)
			.description("Throttling decisions")
			.tag("policy", policy)
			.tag("outcome", outcome)
			.tag("store", this.store)
			.register(this.registry);
	}

	private record PolicyMeters(Counter allowed, Counter rejected, Counter error, Timer latency) {
	}

}
