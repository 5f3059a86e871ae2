package dev.throttle.spring.autoconfigure;

import dev.throttle.DecisionObserver;
import dev.throttle.spring.observation.ThrottleDecisionObserver;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The {@code throttle.decision} observation ({@link ThrottleDecisionObserver}), when the application
 * has an {@link ObservationRegistry} (Spring Boot makes one with the actuator, and a tracing bridge
 * turns its observations into spans). Without one, the throttler observes nothing and a decision
 * costs nothing more.
 */
@AutoConfiguration(
        afterName = {
            "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration",
            "org.springframework.boot.actuate.autoconfigure.observation.ObservationAutoConfiguration"
        })
@ConditionalOnClass(ObservationRegistry.class)
@ConditionalOnBean(ObservationRegistry.class)
@ConditionalOnBooleanProperty(name = "throttle.enabled", matchIfMissing = true)
public final class ThrottleObservationAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean(DecisionObserver.class)
    ThrottleDecisionObserver throttleDecisionObserver(ObservationRegistry observationRegistry) {
        return new ThrottleDecisionObserver(observationRegistry);
    }
}
