package dev.throttle.spring.autoconfigure;

import dev.throttle.ThrottleStore;
import dev.throttle.spring.actuate.ThrottleStoreHealthIndicator;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * The health indicator {@code throttle} ({@link ThrottleStoreHealthIndicator}), when Spring Boot's
 * health support (Boot 4's {@code spring-boot-health}, which the actuator brings) is present and
 * {@code management.health.throttle.enabled} is not false. On Boot 3.5, whose health API lives
 * elsewhere, this does not apply.
 */
@AutoConfiguration(after = ThrottleAutoConfiguration.class)
@ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
@ConditionalOnBean(ThrottleStore.class)
@ConditionalOnBooleanProperty(name = "throttle.enabled", matchIfMissing = true)
@ConditionalOnEnabledHealthIndicator("throttle")
public final class ThrottleHealthAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean(name = "throttleHealthIndicator")
    ThrottleStoreHealthIndicator throttleHealthIndicator(ThrottleStore throttleStore) {
        return new ThrottleStoreHealthIndicator(throttleStore);
    }
}
