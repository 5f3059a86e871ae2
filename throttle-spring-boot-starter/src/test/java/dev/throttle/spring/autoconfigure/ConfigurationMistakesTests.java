package dev.throttle.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.throttle.ThrottleStore;
import dev.throttle.Throttler;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.internal.aop.ThrottledAdvisor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * Every configuration mistake of one start is reported at once, each with its full property path
 * or its method, so that one restart checks every fix; Boot prints them as its "Description /
 * Action" block, not as a stack trace.
 */
@ExtendWith(OutputCaptureExtension.class)
class ConfigurationMistakesTests {

    private static final String ZERO_CAPACITY =
            "throttle.policies.login-ip.capacity must be between 1 and 8388607, was 0";

    private static final String UNKNOWN_ALGORITHM =
            "throttle.policies.api.algorithm: unknown algorithm 'leaky-bucket'; "
                    + "expected one of token-bucket, gcra, fixed-window, sliding-log, lockout, concurrency";

    private static final String NO_ALGORITHM =
            "throttle.policies.search.algorithm is required: one of token-bucket, gcra, "
                    + "fixed-window, sliding-log, lockout, concurrency";

    private static final String NOT_CONFIGURED =
            "@Throttled(policy = \"nope\", key = \"#email\") on UnknownPolicy.call(String) "
                    + "names policy 'nope', which is not configured: add throttle.policies.nope.algorithm (configured: ok)";

    private static final String TOO_COSTLY = "has cost 4, but policy 'ok' (gcra) can only grant a cost from 1 to 3";

    private static final String[] THREE_BAD_POLICIES = {
        "throttle.policies.login-ip.algorithm=token-bucket",
        "throttle.policies.login-ip.capacity=0",
        "throttle.policies.login-ip.refill-period=1s",
        "throttle.policies.api.algorithm=leaky-bucket",
        "throttle.policies.search.limit=3"
    };

    private static final String[] ONE_GOOD_POLICY = {
        "throttle.policies.ok.algorithm=gcra", "throttle.policies.ok.limit=3", "throttle.policies.ok.period=1m"
    };

    private final ApplicationContextRunner contextRunner =
            new ApplicationContextRunner().withUserConfiguration(Application.class);

    @Test
    void everyInvalidPolicyIsReportedAtOnceWithItsPropertyPath() {
        this.contextRunner
                .withPropertyValues(THREE_BAD_POLICIES)
                .run((context) -> assertThat(configurationFailure(context).getMessage())
                        .contains(ZERO_CAPACITY)
                        .contains(UNKNOWN_ALGORITHM)
                        .contains(NO_ALGORITHM));
    }

    @Test
    void everyParameterAPolicyMustNotHaveIsReportedNotJustTheFirst() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=3",
                        "throttle.policies.api.period=1m",
                        "throttle.policies.api.capacity=5",
                        "throttle.policies.api.window=1m")
                .run(
                        (context) -> assertThat(configurationFailure(context).getMessage())
                                .contains(
                                        "throttle.policies.api.capacity means nothing to the gcra algorithm, which takes limit, period")
                                .contains(
                                        "throttle.policies.api.window means nothing to the gcra algorithm, which takes limit, period"));
    }

    @Test
    void badAnnotationsOnSeveralBeansAreReportedTogether() {
        this.contextRunner
                .withBean(UnknownPolicy.class)
                .withBean(TooCostly.class)
                .withPropertyValues(ONE_GOOD_POLICY)
                .run((context) -> assertThat(configurationFailure(context).getMessage())
                        .contains(NOT_CONFIGURED)
                        .contains("@Throttled(policy = \"ok\", key = \"\") on TooCostly.call() " + TOO_COSTLY));
    }

    @Test
    void everyBadAnnotationOfOneBeanIsReportedNotJustTheFirst() {
        this.contextRunner
                .withBean(SeveralMistakes.class)
                .withPropertyValues(ONE_GOOD_POLICY)
                .run((context) -> {
                    ThrottleConfigurationException failure = configurationFailure(context);
                    assertThat(failure.problems()).hasSize(2);
                    assertThat(failure.problems())
                            .anySatisfy(
                                    (problem) -> assertThat(problem)
                                            .contains(
                                                    "on SeveralMistakes.unknown(String) names policy 'nope', which is not configured"));
                    assertThat(failure.problems())
                            .anySatisfy((problem) ->
                                    assertThat(problem).contains("on SeveralMistakes.costly() " + TOO_COSTLY));
                });
    }

    @Test
    void badPoliciesAndBadAnnotationsAreReportedInOneStart() {
        this.contextRunner
                .withBean(UnknownPolicy.class)
                .withBean(TooCostly.class)
                .withPropertyValues(THREE_BAD_POLICIES)
                .withPropertyValues(ONE_GOOD_POLICY)
                .run((context) -> {
                    ThrottleConfigurationException failure = configurationFailure(context);
                    assertThat(failure.problems()).hasSize(5);
                    assertThat(failure.problems())
                            .contains(ZERO_CAPACITY, UNKNOWN_ALGORITHM, NO_ALGORITHM, NOT_CONFIGURED);
                    assertThat(failure.problems())
                            .anySatisfy((problem) -> assertThat(problem).contains(TOO_COSTLY));
                });
    }

    @Test
    void anAnnotationNamingAPolicyWithAMistakeIsNotAlsoReportedAsNamingAnUnconfiguredOne() {
        this.contextRunner
                .withBean(UsesBrokenPolicy.class)
                .withPropertyValues(THREE_BAD_POLICIES)
                .run((context) -> assertThat(configurationFailure(context).problems())
                        .containsExactlyInAnyOrder(ZERO_CAPACITY, UNKNOWN_ALGORITHM, NO_ALGORITHM));
    }

    @Test
    void lazyInitializationDoesNotSkipTheCheck() {
        SpringApplication application = new SpringApplicationBuilder(Application.class, UnknownPolicy.class)
                .web(WebApplicationType.NONE)
                .lazyInitialization(true)
                .properties(THREE_BAD_POLICIES)
                .properties(ONE_GOOD_POLICY)
                .build();
        assertThatThrownBy(application::run)
                .isInstanceOfSatisfying(
                        ThrottleConfigurationException.class,
                        (failure) -> assertThat(failure.problems())
                                .contains(ZERO_CAPACITY, UNKNOWN_ALGORITHM, NO_ALGORITHM, NOT_CONFIGURED));
    }

    @Test
    void policiesAreCheckedEvenWhenThrottlingIsDisabled() {
        this.contextRunner
                .withPropertyValues("throttle.enabled=false")
                .withPropertyValues(THREE_BAD_POLICIES)
                .run((context) -> assertThat(configurationFailure(context).getMessage())
                        .contains(ZERO_CAPACITY)
                        .contains(UNKNOWN_ALGORITHM)
                        .contains(NO_ALGORITHM));
    }

    @Test
    void disabledWithValidPoliciesStartsWithoutAStoreOrAnAdvisor() {
        this.contextRunner
                .withPropertyValues("throttle.enabled=false")
                .withPropertyValues(ONE_GOOD_POLICY)
                .withBean(UnknownPolicy.class)
                .run((context) -> assertThat(context)
                        .hasNotFailed()
                        .doesNotHaveBean(ThrottleStore.class)
                        .doesNotHaveBean(Throttler.class)
                        .doesNotHaveBean(ThrottledAdvisor.class));
    }

    @Test
    void bootPrintsEveryMistakeInOneDescriptionAndActionBlockInsteadOfAStackTrace(CapturedOutput output) {
        SpringApplication application = new SpringApplicationBuilder(
                        Application.class, UnknownPolicy.class, TooCostly.class)
                .web(WebApplicationType.NONE)
                .properties(THREE_BAD_POLICIES)
                .properties(ONE_GOOD_POLICY)
                .build();
        assertThatThrownBy(application::run).isInstanceOf(ThrottleConfigurationException.class);
        String report = output.getOut() + output.getErr();
        assertThat(report)
                .contains("APPLICATION FAILED TO START")
                .contains("Description:")
                .contains("Action:");
        String description = report.substring(report.indexOf("Description:"), report.indexOf("Action:"));
        assertThat(description)
                .contains("5 mistakes")
                .contains("    - " + ZERO_CAPACITY)
                .contains("    - " + UNKNOWN_ALGORITHM)
                .contains("    - " + NO_ALGORITHM)
                .contains("    - " + NOT_CONFIGURED)
                .contains(TOO_COSTLY);
        assertThat(report.substring(report.indexOf("Action:")))
                .contains("throttle.policies")
                .contains("@Throttled");
        assertThat(report).as("no stack trace").doesNotContain("\tat dev.throttle");
    }

    @Test
    void aSingleMistakeKeepsItsOwnMessage() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.login-ip.algorithm=token-bucket",
                        "throttle.policies.login-ip.capacity=0",
                        "throttle.policies.login-ip.refill-period=1s")
                .run((context) -> {
                    ThrottleConfigurationException failure = configurationFailure(context);
                    assertThat(failure).hasMessage(ZERO_CAPACITY);
                    assertThat(failure.problems()).containsExactly(ZERO_CAPACITY);
                });
    }

    @Test
    void anOutgoingClientNamingAPolicyWithMistakesReportsThoseMistakesNotAPolicyThatIsNotConfigured() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.upstream.algorithm=gcra",
                        "throttle.policies.upstream.limit=3",
                        "throttle.policies.upstream.period=1m",
                        "throttle.policies.upstream.capacity=5",
                        "throttle.clients.quotes.base-url=http://localhost:1/",
                        "throttle.clients.quotes.policy=upstream")
                .run((context) -> assertThat(configurationFailure(context).getMessage())
                        .contains("throttle.policies.upstream.capacity means nothing to the gcra algorithm")
                        .doesNotContain("no such policy"));
    }

    private static ThrottleConfigurationException configurationFailure(AssertableApplicationContext context) {
        assertThat(context).hasFailed();
        for (Throwable current = context.getStartupFailure(); current != null; current = current.getCause()) {
            if (current instanceof ThrottleConfigurationException found) {
                return found;
            }
        }
        throw new AssertionError("no ThrottleConfigurationException in", context.getStartupFailure());
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class Application {}

    static class UnknownPolicy {

        @Throttled(policy = "nope", key = "#email")
        public void call(String email) {}
    }

    static class TooCostly {

        @Throttled(policy = "ok", cost = 4)
        public void call() {}
    }

    static class SeveralMistakes {

        @Throttled(policy = "nope", key = "#email")
        public void unknown(String email) {}

        @Throttled(policy = "ok", cost = 4)
        public void costly() {}
    }

    static class UsesBrokenPolicy {

        @Throttled(policy = "login-ip")
        public void login() {}

        @Throttled(policy = "api")
        public void api() {}
    }
}
