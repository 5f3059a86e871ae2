package dev.throttle.spring.security;

import jakarta.servlet.DispatcherType;
import java.util.EnumSet;
import org.springframework.boot.web.servlet.DelegatingFilterProxyRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.security.config.annotation.web.configuration.EnableWebSecurity;

/**
 * Spring Security's filter chain in a servlet container, as Spring Boot's security
 * auto-configuration sets it up (which this module's tests go without, so that no other test
 * application is secured): web security enabled, and its filter registered at Boot's default
 * order for every dispatcher type.
 */
@Configuration(proxyBeanMethods = false)
@EnableWebSecurity
class ServletWebSecurity {

    @Bean
    DelegatingFilterProxyRegistrationBean securityFilterChainRegistration() {
        DelegatingFilterProxyRegistrationBean registration =
                new DelegatingFilterProxyRegistrationBean("springSecurityFilterChain");
        registration.setOrder(-100);
        registration.setDispatcherTypes(EnumSet.allOf(DispatcherType.class));
        return registration;
    }
}
