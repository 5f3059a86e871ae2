package dev.throttle.spring.autoconfigure;

import dev.throttle.ThrottleStore;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.spring.internal.request.PolicyModes;
import dev.throttle.spring.metrics.BanMetrics;
import dev.throttle.spring.metrics.ConcurrencyMetrics;
import dev.throttle.spring.metrics.MemoryStoreMetrics;
import dev.throttle.spring.metrics.MicrometerThrottleListener;
import dev.throttle.spring.metrics.NearCacheMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * Micrometer meters for throttling, when the application has a {@link MeterRegistry}:
 * {@code throttle.decisions}, {@code throttle.store.latency} and, for the memory store, the gauge
 * {@code throttle.memory.keys}. Both are {@link io.micrometer.core.instrument.binder.MeterBinder}s,
 * which Spring Boot's metrics auto-configuration binds to the registry.
 */
@AutoConfiguration(
        after = ThrottleAutoConfiguration.class,
        afterName = {
            "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
            "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration"
        })
@ConditionalOnClass(MeterRegistry.class)
@ConditionalOnBean({MeterRegistry.class, ThrottleStore.class})
@ConditionalOnBooleanProperty(name = "throttle.enabled", matchIfMissing = true)
public final class ThrottleMetricsAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    MicrometerThrottleListener micrometerThrottleListener(ObjectProvider<PolicyModes> modes) {
        PolicyModes policyModes = modes.getIfAvailable();
        return (policyModes != null)
                ? new MicrometerThrottleListener(policyModes::of)
                : new MicrometerThrottleListener();
    }

    /** {@code throttle.bans.started} and {@code throttle.bans.refused}, tagged with the ban's name. */
    @Bean
    @ConditionalOnMissingBean
    BanMetrics throttleBanMetrics(ThrottleProperties properties) {
        return new BanMetrics(properties.getBans().keySet());
    }

    @Bean
    @ConditionalOnBean(MemoryThrottleStore.class)
    @ConditionalOnMissingBean
    MemoryStoreMetrics throttleMemoryStoreMetrics(MemoryThrottleStore throttleStore) {
        return new MemoryStoreMetrics(throttleStore);
    }

    @Bean
    @ConditionalOnMissingBean
    ConcurrencyMetrics throttleConcurrencyMetrics(Throttler throttler) {
        return new ConcurrencyMetrics(throttler);
    }

    /** The gauge {@code throttle.near-cache.size}, for the Redis store (wrapped in its failure mode). */
    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.data.redis.connection.ReactiveRedisConnectionFactory")
    static class NearCacheMetricsConfiguration {

        @Bean
        @ConditionalOnBean(ResilientThrottleStore.class)
        @ConditionalOnMissingBean
        NearCacheMetrics throttleNearCacheMetrics(ResilientThrottleStore throttleStore) {
            return new NearCacheMetrics(throttleStore.store());
        }
    }
}
