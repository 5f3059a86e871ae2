package dev.throttle.spring.metrics;

import dev.throttle.memory.MemoryThrottleStore;
import io.micrometer.core.instrument.binder.MeterBinder;

/**
 * The gauge {@code throttle.memory.keys}: how many keys the memory store holds, all policies
 * together. A {@link MeterBinder}, bound by Spring Boot to the application's registry.
 */
public final class MemoryStoreMetrics extends StoreGauge<MemoryThrottleStore> {

    /** The gauge's name. */
    public static final String KEYS = "throttle.memory.keys";

    /**
     * Creates the binder.
     * @param store the store to measure
     */
    public MemoryStoreMetrics(MemoryThrottleStore store) {
        super(KEYS, "Keys held by the throttle memory store", store, MemoryThrottleStore::keyCount);
    }
}
