package dev.throttle.spring.metrics;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;

import dev.throttle.ThrottleStore;
import dev.throttle.spring.redis.RedisThrottleStore;

/**
 * The gauge {@code throttle.near-cache.size}: how many refusals the Redis store's near cache
 * remembers on this instance, all policies together (0 for another store). A {@link MeterBinder},
 * bound by Spring Boot to the application's registry.
 */
public final class NearCacheMetrics implements MeterBinder {

	/** The gauge's name. */
	public static final String SIZE = "throttle.near-cache.size";

	private final ThrottleStore store;

	/**
	 * Creates the binder.
	 * @param store the store whose near cache to measure: a {@link RedisThrottleStore}
	 */
	public NearCacheMetrics(ThrottleStore store) {
		this.store = store;
	}

	@Override
	public void bindTo(MeterRegistry registry) {
		Gauge.builder(SIZE, this.store, (store) -> (store instanceof RedisThrottleStore redis) ? redis.nearCacheSize() : 0)
			.description("Refusals remembered by the throttle Redis store's near cache on this instance")
			.register(registry);
	}

}
