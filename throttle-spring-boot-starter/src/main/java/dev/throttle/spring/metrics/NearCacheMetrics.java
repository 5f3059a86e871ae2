package dev.throttle.spring.metrics;

import dev.throttle.ThrottleStore;
import dev.throttle.spring.redis.RedisThrottleStore;
import io.micrometer.core.instrument.binder.MeterBinder;

/**
 * The gauge {@code throttle.near-cache.size}: how many refusals the Redis store's near cache
 * remembers on this instance, all policies together (0 for another store). A {@link MeterBinder},
 * bound by Spring Boot to the application's registry.
 */
public final class NearCacheMetrics extends StoreGauge<ThrottleStore> {

    /** The gauge's name. */
    public static final String SIZE = "throttle.near-cache.size";

    /**
     * Creates the binder.
     * @param store the store whose near cache to measure: a {@link RedisThrottleStore}
     */
    public NearCacheMetrics(ThrottleStore store) {
        super(
                SIZE,
                "Refusals remembered by the throttle Redis store's near cache on this instance",
                store,
                (measured) -> (measured instanceof RedisThrottleStore redis) ? redis.nearCacheSize() : 0);
    }
}
