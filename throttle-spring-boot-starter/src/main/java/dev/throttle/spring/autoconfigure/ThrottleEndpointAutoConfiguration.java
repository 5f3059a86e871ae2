package dev.throttle.spring.autoconfigure;

import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

import dev.throttle.Throttler;
import dev.throttle.spring.actuate.ThrottleEndpoint;

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
	ThrottleEndpoint throttleEndpoint(Throttler throttler) {
		return new ThrottleEndpoint(throttler);
	}

}
