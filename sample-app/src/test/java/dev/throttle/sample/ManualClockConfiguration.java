package dev.throttle.sample;

import dev.throttle.ManualTimeSource;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

/**
 * How an application tests its own throttled code without sleeping: declare a
 * {@link ManualTimeSource} bean (the starter's stores read it instead of the system clock) and
 * advance it.
 */
@TestConfiguration(proxyBeanMethods = false)
class ManualClockConfiguration {

    @Bean
    ManualTimeSource manualTimeSource() {
        return new ManualTimeSource();
    }
}
