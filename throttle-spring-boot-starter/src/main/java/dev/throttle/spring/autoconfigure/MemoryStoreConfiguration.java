package dev.throttle.spring.autoconfigure;

import dev.throttle.ThrottleStore;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.ThrottleConfigurationException;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The memory store, the default.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty(name = "throttle.store.type", havingValue = "memory", matchIfMissing = true)
class MemoryStoreConfiguration {

    @Bean
    @ConditionalOnMissingBean(ThrottleStore.class)
    MemoryThrottleStore throttleStore(TimeSource throttleTimeSource, ThrottleProperties properties) {
        PolicyDurability.warnUnused(properties, "memory");
        return new MemoryThrottleStore(throttleTimeSource, maximumKeys(properties));
    }

    /**
     * Returns {@code throttle.store.memory.maximum-keys}, checked: the one check of it, for the
     * memory store and for the Redis store's local fallback alike.
     * @throws ThrottleConfigurationException when it is below 1
     */
    static long maximumKeys(ThrottleProperties properties) {
        long maximumKeys = properties.getStore().getMemory().getMaximumKeys();
        if (maximumKeys < 1) {
            throw new ThrottleConfigurationException(
                    "throttle.store.memory.maximum-keys must be at least 1, was " + maximumKeys);
        }
        return maximumKeys;
    }
}
