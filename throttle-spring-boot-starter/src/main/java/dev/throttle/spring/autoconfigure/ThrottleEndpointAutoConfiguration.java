package dev.throttle.spring.autoconfigure;

import dev.throttle.Throttler;
import dev.throttle.spring.actuate.ThrottleEndpoint;
import dev.throttle.spring.actuate.ThrottleEndpointChanges;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The {@code throttle} actuator endpoint, when Actuator is present and the endpoint is available
 * (enabled and exposed).
 */
@AutoConfiguration(after = ThrottleAutoConfiguration.class)
@ConditionalOnClass(Endpoint.class)
@ConditionalOnBean(Throttler.class)
@ConditionalOnAvailableEndpoint(endpoint = ThrottleEndpoint.class)
public final class ThrottleEndpointAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    ThrottleEndpoint throttleEndpoint(Throttler throttler, ObjectProvider<ThrottlePolicies> policies) {
        return new ThrottleEndpoint(throttler, policies.getIfAvailable());
    }

    /** Hands {@code POST /actuator/throttle/{policy}}'s JSON object to the endpoint whole. */
    @Bean
    static ThrottleEndpointChanges throttleEndpointChanges(ObjectProvider<ThrottleEndpoint> endpoint) {
        return new ThrottleEndpointChanges(endpoint);
    }
}
