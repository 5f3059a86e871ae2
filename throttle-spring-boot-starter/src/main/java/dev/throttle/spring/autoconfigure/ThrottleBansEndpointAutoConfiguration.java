package dev.throttle.spring.autoconfigure;

import dev.throttle.spring.actuate.ThrottleBansEndpoint;
import dev.throttle.spring.actuate.ThrottleBansEndpointFor;
import dev.throttle.spring.bans.Bans;
import dev.throttle.spring.internal.web.BanGate;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The {@code throttlebans} actuator endpoint, when Actuator is present and the endpoint is available
 * (enabled and exposed).
 */
@AutoConfiguration(after = ThrottleAutoConfiguration.class)
@ConditionalOnClass(Endpoint.class)
@ConditionalOnBean(Bans.class)
@ConditionalOnAvailableEndpoint(endpoint = ThrottleBansEndpoint.class)
public final class ThrottleBansEndpointAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    ThrottleBansEndpoint throttleBansEndpoint(Bans bans, ObjectProvider<BanGate> gate) {
        BanGate keys = gate.getIfAvailable();
        return (keys != null) ? new ThrottleBansEndpoint(bans, keys::keyOf) : new ThrottleBansEndpoint(bans);
    }

    @Bean
    static ThrottleBansEndpointFor throttleBansEndpointFor(ObjectProvider<ThrottleBansEndpoint> endpoint) {
        return new ThrottleBansEndpointFor(endpoint);
    }
}
