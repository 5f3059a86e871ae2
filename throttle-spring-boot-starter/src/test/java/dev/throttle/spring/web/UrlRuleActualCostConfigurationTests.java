package dev.throttle.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleWebMvcAutoConfiguration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;

/**
 * A URL rule's {@code actual-cost-header} is checked at startup, naming the property: a header name,
 * on a policy that can carry a debt.
 */
class UrlRuleActualCostConfigurationTests {

    private final WebApplicationContextRunner contextRunner = new WebApplicationContextRunner()
            .withConfiguration(
                    AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleWebMvcAutoConfiguration.class))
            .withPropertyValues(
                    "throttle.policies.login.algorithm=lockout",
                    "throttle.policies.login.timeouts=1s,1m",
                    "throttle.policies.export.algorithm=token-bucket",
                    "throttle.policies.export.capacity=10",
                    "throttle.policies.export.refill-period=1s",
                    "throttle.http.rules[0].paths=/export",
                    "throttle.http.rules[0].policy=export");

    @Test
    void anActualCostHeaderOnAPolicyThatCannotCarryADebtFailsTheStart() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.http.rules[0].policy=login", "throttle.http.rules[0].actual-cost-header=X-Rows")
                .run((context) -> assertThat(context)
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining("throttle.http.rules[0].actual-cost-header is set, but policy 'login'")
                        .hasMessageContaining("cannot carry a debt"));
    }

    @Test
    void anActualCostHeaderThatIsNoHeaderNameFailsTheStart() {
        this.contextRunner
                .withPropertyValues("throttle.http.rules[0].actual-cost-header=X Rows")
                .run((context) -> assertThat(context)
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining(
                                "throttle.http.rules[0].actual-cost-header 'X Rows' is not a header name"));
    }

    @Test
    void anActualCostHeaderOnATokenBucketStarts() {
        this.contextRunner
                .withPropertyValues("throttle.http.rules[0].actual-cost-header=X-Rows")
                .run((context) -> assertThat(context).hasNotFailed().hasBean("throttleHttpRules"));
    }
}
