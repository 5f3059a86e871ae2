package dev.throttle.spring.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.spring.autoconfigure.ThrottleProperties;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ApplicationContext;

/**
 * {@code throttle.gateway.enabled=false}, as the documentation names it, binds (the starter's
 * properties refuse names they do not know) and leaves the gateway without throttle's
 * {@code RateLimiter}, while the rest of the starter is on.
 */
@SpringBootTest(
        classes = GatewayTestApplication.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.gateway.enabled=false",
            "throttle.policies.api.algorithm=fixed-window",
            "throttle.policies.api.limit=1",
            "throttle.policies.api.window=1h"
        })
class GatewayLeftAloneTests {

    @Autowired
    private ApplicationContext context;

    @Autowired
    private ThrottleProperties properties;

    @Test
    void theGatewayGetsNoThrottleRateLimiterAndTheSwitchIsBound() {
        assertThat(this.context.getBeansOfType(ThrottleRateLimiter.class)).isEmpty();
        assertThat(this.properties.getGateway().isEnabled()).isFalse();
        assertThat(this.properties.getPolicies()).containsKey("api");
    }
}
