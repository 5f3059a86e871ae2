package dev.throttle.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.internal.web.ClientAccess;
import dev.throttle.spring.internal.web.HttpRules;
import dev.throttle.spring.internal.web.ServletHttpRulesFilter;
import dev.throttle.spring.internal.web.WebFluxHttpRulesFilter;
import dev.throttle.spring.internal.web.WebFluxRefusals;
import dev.throttle.spring.web.ThrottleExceptionHandler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.assertj.ApplicationContextAssertProvider;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.web.servlet.FilterRegistrationBean;

/**
 * The URL rules, the safelist and the blocklist as auto-configured: checked at startup, with the
 * property in every message; the filter ordered before Spring Security's and enabled only when it
 * has something to do.
 */
@ExtendWith(OutputCaptureExtension.class)
class UrlRulesAutoConfigurationTests {

    private final WebApplicationContextRunner servlet = new WebApplicationContextRunner()
            .withConfiguration(
                    AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleWebMvcAutoConfiguration.class))
            .withPropertyValues(
                    "throttle.policies.api.algorithm=gcra",
                    "throttle.policies.api.limit=3",
                    "throttle.policies.api.period=60s");

    private final ReactiveWebApplicationContextRunner reactive = new ReactiveWebApplicationContextRunner()
            .withConfiguration(
                    AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleWebFluxAutoConfiguration.class))
            .withPropertyValues(
                    "throttle.policies.api.algorithm=gcra",
                    "throttle.policies.api.limit=3",
                    "throttle.policies.api.period=60s");

    @Test
    void theFilterRunsBeforeSpringSecurityAndOnlyWhenThereIsARuleOrABlockedAddress() {
        // no filter registration at all, rather than one disabled (which Boot logs at every start)
        this.servlet.run((context) -> assertThat(context).doesNotHaveBean("throttleHttpRulesFilter"));
        this.servlet
                .withPropertyValues("throttle.http.blocklist=", "throttle.http.safelist=127.0.0.1")
                .run((context) -> assertThat(context).doesNotHaveBean("throttleHttpRulesFilter"));
        this.servlet
                .withPropertyValues("throttle.http.blocklist=203.0.113.0/24", "throttle.http.filter-order=5")
                .run((context) -> {
                    FilterRegistrationBean<?> registration =
                            context.getBean("throttleHttpRulesFilter", FilterRegistrationBean.class);
                    assertThat(registration.getFilter()).isInstanceOf(ServletHttpRulesFilter.class);
                    assertThat(registration.isEnabled()).isTrue();
                    assertThat(registration.getOrder()).isEqualTo(5);
                });
        this.servlet
                .withPropertyValues("throttle.http.rules[0].paths=/api/**", "throttle.http.rules[0].policy=api")
                .run((context) -> {
                    FilterRegistrationBean<?> registration =
                            context.getBean("throttleHttpRulesFilter", FilterRegistrationBean.class);
                    assertThat(registration.isEnabled()).isTrue();
                    assertThat(registration.getOrder()).isEqualTo(-110).isLessThan(-100);
                });
    }

    @Test
    void aRulePathWrittenWithTheContextPathIsSaidAtStartup(CapturedOutput output) {
        this.servlet
                .withPropertyValues(
                        "server.servlet.context-path=/app/",
                        "throttle.http.rules[0].paths=/app/api/hello, /apple/**",
                        "throttle.http.rules[0].policy=api")
                .run((context) -> assertThat(context).hasNotFailed());
        assertThat(output)
                .contains("throttle.http.rules[0].paths[0] '/app/api/hello' starts with server.servlet.context-path "
                        + "'/app', but a rule matches the path after it ('/api/hello')")
                .doesNotContain("'/apple/**' starts with");
        this.reactive
                .withPropertyValues(
                        "spring.webflux.base-path=/base",
                        "throttle.http.rules[0].paths=/BASE/**",
                        "throttle.http.rules[0].policy=api")
                .run((context) -> assertThat(context).hasNotFailed());
        assertThat(output).contains("'/BASE/**' starts with spring.webflux.base-path '/base'");
    }

    @Test
    void aBadRuleFailsStartupNamingItsProperty() {
        this.servlet
                .withPropertyValues(
                        "throttle.http.rules[0].paths=/api/**",
                        "throttle.http.rules[0].policy=missing",
                        "throttle.http.rules[1].paths=/x",
                        "throttle.http.rules[1].policy=api",
                        "throttle.http.rules[1].key=#ip +")
                .run((context) -> assertThat(failure(context).problems())
                        .anySatisfy((p) -> assertThat(p).startsWith("throttle.http.rules[0].policy names 'missing'"))
                        .anySatisfy(
                                (p) -> assertThat(p).startsWith("throttle.http.rules[1].key '#ip +' does not parse")));
        this.reactive
                .withPropertyValues("throttle.http.rules[0].paths=/api/{*a}/b", "throttle.http.rules[0].policy=api")
                .run((context) -> assertThat(failure(context).problems())
                        .anySatisfy((p) -> assertThat(p)
                                .startsWith("throttle.http.rules[0].paths[0] '/api/{*a}/b' is not a path pattern")));
    }

    @Test
    void aRuleNamingAPolicyWithMistakesLetsTheStartReportThoseMistakesNotAPolicyThatIsNotConfigured() {
        // the policy is configured, with parameters its algorithm does not take
        this.servlet
                .withPropertyValues(
                        "throttle.policies.reports.algorithm=token-bucket",
                        "throttle.policies.reports.capacity=5",
                        "throttle.policies.reports.refill-period=1m",
                        "throttle.policies.reports.lease=30s",
                        "throttle.http.rules[0].paths=/api/reports/**",
                        "throttle.http.rules[0].policy=reports",
                        "throttle.http.rules[1].paths=/x",
                        "throttle.http.rules[1].policy=api",
                        "throttle.http.rules[1].key=#ip +")
                .run((context) -> assertThat(failure(context).problems())
                        .anySatisfy((p) -> assertThat(p)
                                .startsWith("throttle.policies.reports.lease means nothing to the token-bucket"))
                        .anySatisfy(
                                (p) -> assertThat(p).startsWith("throttle.http.rules[1].key '#ip +' does not parse"))
                        .noneSatisfy((p) -> assertThat(p).contains("not configured")));
        this.reactive
                .withPropertyValues(
                        "throttle.policies.reports.algorithm=token-bucket",
                        "throttle.policies.reports.capacity=5",
                        "throttle.policies.reports.refill-period=1m",
                        "throttle.policies.reports.lease=30s",
                        "throttle.http.rules[0].paths=/api/reports/**",
                        "throttle.http.rules[0].policy=reports")
                .run((context) -> assertThat(failure(context).problems())
                        .singleElement()
                        .satisfies((p) -> assertThat(p)
                                .startsWith("throttle.policies.reports.lease means nothing to the token-bucket")));
    }

    @Test
    void aBadPlanOrCostFailsStartupNamingItsProperty() {
        this.servlet
                .withPropertyValues(
                        "throttle.http.rules[0].paths=/api/**",
                        "throttle.http.rules[0].policy=api",
                        "throttle.http.rules[0].plan=#tier",
                        "throttle.http.rules[0].cost=#headers['X-Cost'",
                        "throttle.http.rules[1].paths=/x",
                        "throttle.http.rules[1].policy=api",
                        "throttle.http.rules[1].plan=#headers[",
                        "throttle.http.rules[1].cost=#weight * 2")
                .run((context) -> assertThat(failure(context).problems())
                        .hasSize(4)
                        .anySatisfy((p) -> assertThat(p).startsWith("throttle.http.rules[0].plan '#tier' names #tier"))
                        .anySatisfy((p) -> assertThat(p)
                                .startsWith("throttle.http.rules[0].cost '#headers['X-Cost'' does not parse"))
                        .anySatisfy((p) ->
                                assertThat(p).startsWith("throttle.http.rules[1].plan '#headers[' does not parse"))
                        .anySatisfy((p) ->
                                assertThat(p).startsWith("throttle.http.rules[1].cost '#weight * 2' names #weight")));
        this.reactive
                .withPropertyValues(
                        "throttle.http.rules[0].paths=/api/**",
                        "throttle.http.rules[0].policy=api",
                        "throttle.http.rules[0].cost=4")
                .run((context) -> assertThat(failure(context).problems())
                        .singleElement()
                        .satisfies(
                                (p) -> assertThat(p).startsWith("throttle.http.rules[0].cost is 4, but policy 'api'")));
        this.servlet
                .withPropertyValues(
                        "throttle.http.rules[0].paths=/api/**",
                        "throttle.http.rules[0].policy=api",
                        "throttle.http.rules[0].cost=3",
                        "throttle.http.rules[0].plan=#headers['X-Plan']")
                .run((context) -> assertThat(context).hasNotFailed());
    }

    @Test
    void aBadCidrFailsStartupNamingItsProperty() {
        this.servlet
                .withPropertyValues("throttle.http.safelist=10.0.0.0/8, 10.0.0.0/99")
                .run((context) -> assertThat(failure(context).problems())
                        .singleElement()
                        .satisfies((p) ->
                                assertThat(p).startsWith("throttle.http.safelist[1] '10.0.0.0/99' is not a CIDR")));
    }

    @Test
    void aRuleKeyedByPrincipalNeedsSpringSecurityAndAFilterAfterIt() {
        this.servlet
                .withClassLoader(new FilteredClassLoader("org.springframework.security"))
                .withPropertyValues(
                        "throttle.http.rules[0].paths=/api/**",
                        "throttle.http.rules[0].policy=api",
                        "throttle.http.rules[0].key=#principal")
                .run((context) -> assertThat(failure(context).problems())
                        .singleElement()
                        .satisfies((p) -> assertThat(p)
                                .contains("throttle.http.rules[0].key '#principal' uses #principal, but "
                                        + "Spring Security is not on the classpath")));
    }

    @Test
    void webFluxGetsTheWebFilterAndThePageAdviceBesideTheProblemHandler() {
        this.reactive
                .withPropertyValues("throttle.http.rules[0].paths=/api/**", "throttle.http.rules[0].policy=api")
                .run((context) -> {
                    assertThat(context)
                            .hasSingleBean(WebFluxHttpRulesFilter.class)
                            .hasSingleBean(HttpRules.class)
                            .hasSingleBean(ClientAccess.class)
                            .hasSingleBean(WebFluxRefusals.class)
                            .hasSingleBean(ThrottleExceptionHandler.class);
                    assertThat(context.getBean(WebFluxHttpRulesFilter.class).getOrder())
                            .isEqualTo(-110);
                });
    }

    private static ThrottleConfigurationException failure(ApplicationContextAssertProvider<?> context) {
        assertThat(context).hasFailed();
        for (Throwable current = context.getStartupFailure(); current != null; current = current.getCause()) {
            if (current instanceof ThrottleConfigurationException found) {
                return found;
            }
        }
        throw new AssertionError("no ThrottleConfigurationException in", context.getStartupFailure());
    }
}
