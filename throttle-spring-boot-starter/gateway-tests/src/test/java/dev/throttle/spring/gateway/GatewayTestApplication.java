package dev.throttle.spring.gateway;

import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.cloud.gateway.filter.ratelimit.KeyResolver;
import org.springframework.context.annotation.Bean;
import reactor.core.publisher.Mono;

/** A gateway whose routes (in the tests' properties) are throttled by policies under {@code throttle.policies}. */
@SpringBootApplication(proxyBeanMethods = false)
class GatewayTestApplication {

    /** The caller as the client names itself; a real gateway would take the principal or the address. */
    @Bean
    KeyResolver clientKeyResolver() {
        return (exchange) -> Mono.justOrEmpty(exchange.getRequest().getHeaders().getFirst("X-Client"));
    }
}
