package dev.throttle.boot3;

import dev.throttle.ManualTimeSource;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

/**
 * A manual clock for the memory store, so that tests advance time instead of sleeping.
 */
@TestConfiguration(proxyBeanMethods = false)
class ManualClock {

    @Bean
    ManualTimeSource manualTimeSource() {
        return new ManualTimeSource();
    }
}
