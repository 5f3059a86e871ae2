package dev.throttle.spring.autoconfigure;

import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * With {@code throttle.enabled=false} nothing is throttled and no store, throttler or advisor is
 * made, but {@code throttle.policies} is still checked: a mistake is found where throttling is off
 * (a developer's machine, a test) rather than first where it is on.
 */
@AutoConfiguration
@ConditionalOnBooleanProperty(name = "throttle.enabled", havingValue = false)
@EnableConfigurationProperties(ThrottleProperties.class)
public final class ThrottleDisabledAutoConfiguration {

    @Bean
    static SmartInitializingSingleton throttlePoliciesCheck(
            ListableBeanFactory beanFactory, ObjectProvider<ThrottleProperties> properties) {
        return ThrottleStartupCheck.policiesOnly(beanFactory, properties);
    }
}
