package dev.throttle.spring.metrics;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;

import dev.throttle.memory.MemoryThrottleStore;

/**
 * The gauge {@code throttle.memory.keys}: how many keys the memory store holds, all policies
 * together. A {@link MeterBinder}, bound by Spring Boot to the application's registry.
 */
public final class MemoryStoreMetrics implements MeterBinder {

	/** The gauge's name. */
	public static final String KEYS = "throttle.memory.keys";

	private final MemoryThrottleStore store;

	/**
	 * Creates the binder.
	 * @param store the store to measure
	 */
	public MemoryStoreMetrics(MemoryThrottleStore store) {
		this.store = store;
	}

	@Override
	public void bindTo(MeterRegistry registry) {
		Gauge.builder(KEYS, this.store, MemoryThrottleStore::keyCount)
			.description("Keys held by the throttle memory store")
			.register(registry);
	}

}
