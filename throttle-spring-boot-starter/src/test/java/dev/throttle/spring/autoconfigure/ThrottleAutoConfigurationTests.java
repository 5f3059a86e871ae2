package dev.throttle.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import dev.throttle.GcraPolicy;
import dev.throttle.LockoutPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.ThrottleStore;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.internal.aop.ThrottledAdvisor;
import dev.throttle.spring.internal.aop.ThrottledMethods;
import dev.throttle.spring.internal.request.ReactiveThrottleRequestContext;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import dev.throttle.spring.internal.web.ServletThrottleRequestContext;
import dev.throttle.spring.web.ThrottleExceptionHandler;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

class ThrottleAutoConfigurationTests {

    private final ApplicationContextRunner contextRunner =
            new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(ThrottleAutoConfiguration.class));

    @Test
    void definesAMemoryStoreOnTheSystemClockAndAThrottlerByDefault() {
        this.contextRunner.run((context) -> {
            assertThat(context)
                    .hasSingleBean(Throttler.class)
                    .hasSingleBean(MemoryThrottleStore.class)
                    .hasSingleBean(ThrottledAdvisor.class)
                    .hasSingleBean(ThrottledMethods.class);
            assertThat(context.getBean(TimeSource.class)).isSameAs(TimeSource.system());
            assertThat(context.getBean(Throttler.class).policies()).isEmpty();
        });
    }

    @Test
    void bindsPoliciesIncludingDurationsAndCommaSeparatedLists() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.login.algorithm=lockout",
                        "throttle.policies.login.timeouts=1s,2s,4s",
                        "throttle.policies.login-ip.algorithm=token-bucket",
                        "throttle.policies.login-ip.capacity=20",
                        "throttle.policies.login-ip.refill-period=30s",
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=100",
                        "throttle.policies.api.period=1m",
                        "throttle.policies.email.algorithm=sliding-log")
                .run((context) -> {
                    Throttler throttler = context.getBean(Throttler.class);
                    assertThat(throttler.policies()).containsOnlyKeys("login", "login-ip", "api", "email");
                    assertThat(throttler.policy("login"))
                            .isEqualTo(LockoutPolicy.of(
                                    "login",
                                    List.of(Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(4))));
                    assertThat(throttler.policy("login-ip"))
                            .isEqualTo(new TokenBucketPolicy("login-ip", 20, 1, Duration.ofSeconds(30)));
                    assertThat(throttler.policy("api")).isEqualTo(new GcraPolicy("api", 100, Duration.ofMinutes(1)));
                    assertThat(throttler.policy("email")).isEqualTo(SlidingLogPolicy.withDefaults("email"));
                });
    }

    @Test
    void everyBeanBacksOffWhenTheApplicationDefinesItsOwn() {
        this.contextRunner.withUserConfiguration(OwnBeans.class).run((context) -> {
            assertThat(context.getBean(TimeSource.class)).isSameAs(OwnBeans.CLOCK);
            assertThat(context.getBean(ThrottleStore.class)).isSameAs(OwnBeans.STORE);
            assertThat(context.getBean(Throttler.class)).isSameAs(OwnBeans.THROTTLER);
            assertThat(context)
                    .hasSingleBean(ThrottledMethods.class)
                    .getBean(ThrottledMethods.class)
                    .isSameAs(context.getBean("ownThrottledMethods"));
            assertThat(context)
                    .hasSingleBean(ThrottledAdvisor.class)
                    .getBean(ThrottledAdvisor.class)
                    .isSameAs(context.getBean("ownThrottledAdvisor"));
        });
    }

    @Test
    void theMemoryStoreReadsTheApplicationsTimeSource() {
        this.contextRunner
                .withBean(TimeSource.class, ManualTimeSource::new)
                .withPropertyValues(
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=1",
                        "throttle.policies.api.period=10s")
                .run((context) -> {
                    Throttler throttler = context.getBean(Throttler.class);
                    assertThat(throttler.tryAcquire("api", "k").allowed()).isTrue();
                    assertThat(throttler.tryAcquire("api", "k").allowed()).isFalse();
                    ((ManualTimeSource) context.getBean(TimeSource.class)).advance(Duration.ofSeconds(10));
                    assertThat(throttler.tryAcquire("api", "k").allowed()).isTrue();
                });
    }

    @Test
    void disabledMeansNoThrottlingBeans() {
        this.contextRunner
                .withPropertyValues("throttle.enabled=false")
                .run((context) -> assertThat(context)
                        .doesNotHaveBean(Throttler.class)
                        .doesNotHaveBean(ThrottleStore.class)
                        .doesNotHaveBean(ThrottledAdvisor.class));
    }

    @Test
    void redisStoreWithoutSpringDataRedisFailsAtStartupSayingWhatToAdd() {
        this.contextRunner
                .withClassLoader(new FilteredClassLoader("org.springframework.data.redis"))
                .withPropertyValues("throttle.store.type=redis")
                .run((context) -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .rootCause()
                        .isInstanceOf(ThrottleConfigurationException.class)
                        .hasMessageContaining("throttle.store.type=redis needs Spring Data Redis on the classpath")
                        .hasMessageContaining("spring-boot-starter-data-redis"));
    }

    @Test
    void anUnknownStoreTypeFailsNamingTheProperty() {
        this.contextRunner.withPropertyValues("throttle.store.type=etcd").run((context) -> {
            assertThat(context).hasFailed();
            StringBuilder messages = new StringBuilder();
            for (Throwable current = context.getStartupFailure(); current != null; current = current.getCause()) {
                messages.append(current.getMessage()).append('\n');
            }
            assertThat(messages).contains("throttle.store.type").contains("etcd");
        });
    }

    @Test
    void zeroMaximumKeysFails() {
        failsWith(
                "throttle.store.memory.maximum-keys must be at least 1, was 0", "throttle.store.memory.maximum-keys=0");
    }

    @Test
    void aPolicyWithoutAnAlgorithmFails() {
        failsWith(
                "throttle.policies.api.algorithm is required: one of token-bucket, gcra, fixed-window, sliding-log, lockout, concurrency",
                "throttle.policies.api.limit=3");
    }

    @Test
    void anUnknownAlgorithmFails() {
        failsWith(
                "throttle.policies.api.algorithm: unknown algorithm 'leaky-bucket'; expected one of token-bucket, gcra, "
                        + "fixed-window, sliding-log, lockout, concurrency",
                "throttle.policies.api.algorithm=leaky-bucket");
    }

    @Test
    void aMissingParameterFails() {
        failsWith(
                "throttle.policies.api.period is required",
                "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=3");
    }

    @Test
    void aZeroCapacityFails() {
        failsWith(
                "throttle.policies.ip.capacity must be between 1 and 8388607, was 0",
                "throttle.policies.ip.algorithm=token-bucket",
                "throttle.policies.ip.capacity=0",
                "throttle.policies.ip.refill-period=1s");
    }

    @Test
    void aNegativeDurationFails() {
        failsWith(
                "throttle.policies.fw.window must be positive, was PT-5S",
                "throttle.policies.fw.algorithm=fixed-window",
                "throttle.policies.fw.limit=3",
                "throttle.policies.fw.window=-5s");
    }

    @Test
    void aDurationWithoutAUnitFailsRatherThanBeingReadAsMilliseconds() {
        failsWith(
                "throttle.policies.owners.refill-period is 60, a number without a unit, which Spring Boot reads as 60 "
                        + "milliseconds: write the unit (60s, 60m or 60ms if milliseconds are meant)",
                "throttle.policies.owners.algorithm=token-bucket",
                "throttle.policies.owners.capacity=3",
                "throttle.policies.owners.refill-period=60");
    }

    @Test
    void aDurationWithoutAUnitThatAnotherSourceOverridesIsNoMistake() {
        // system properties come after the test's own values: the value that wins has a unit
        this.contextRunner
                .withSystemProperties("throttle.policies.owners.refill-period=60")
                .withPropertyValues(
                        "throttle.policies.owners.algorithm=token-bucket",
                        "throttle.policies.owners.capacity=3",
                        "throttle.policies.owners.refill-period=60s")
                .run((context) -> assertThat(context).hasNotFailed());
    }

    @Test
    void aDurationWithoutAUnitInAnEnvironmentVariableFails() {
        // THROTTLE_POLICIES_OWNERS_REFILLPERIOD is how Spring Boot spells refill-period in the environment
        this.contextRunner
                .withInitializer((context) -> context.getEnvironment()
                        .getPropertySources()
                        .addFirst(new SystemEnvironmentPropertySource(
                                "test-" + StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME,
                                Map.of(
                                        "THROTTLE_POLICIES_OWNERS_ALGORITHM", "token-bucket",
                                        "THROTTLE_POLICIES_OWNERS_CAPACITY", "3",
                                        "THROTTLE_POLICIES_OWNERS_REFILLPERIOD", "60",
                                        "THROTTLE_POLICIES_LOGIN_ALGORITHM", "lockout",
                                        "THROTTLE_POLICIES_LOGIN_TIMEOUTS", "1s,2"))))
                .run(
                        (context) -> assertThat(
                                        ((ThrottleConfigurationException) configurationFailure(context)).problems())
                                .containsExactlyInAnyOrder(
                                        "throttle.policies.owners.refill-period is 60, a number without a unit, which Spring Boot "
                                                + "reads as 60 milliseconds: write the unit (60s, 60m or 60ms if milliseconds are "
                                                + "meant)",
                                        "throttle.policies.login.timeouts is 1s,2, a number without a unit, which Spring Boot "
                                                + "reads as 2 milliseconds: write the unit (2s, 2m or 2ms if milliseconds are meant)"));
    }

    @Test
    void everyDurationWithoutAUnitIsNamedAtOnceAndZeroNeedsNone() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.login.algorithm=lockout",
                        "throttle.policies.login.timeouts=1s,2,4s",
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=3",
                        "throttle.policies.api.period=1m",
                        "throttle.policies.api.wait=0",
                        "throttle.policies.api.plans.free.period=30",
                        "throttle.policies.fw.algorithm=fixed-window",
                        "throttle.policies.fw.limit=3",
                        "throttle.policies.fw.window=60")
                .run((context) -> assertThat(
                                ((ThrottleConfigurationException) configurationFailure(context)).problems())
                        .containsExactlyInAnyOrder(
                                "throttle.policies.login.timeouts is 1s,2,4s, a number without a unit, which Spring Boot "
                                        + "reads as 2 milliseconds: write the unit (2s, 2m or 2ms if milliseconds are meant)",
                                "throttle.policies.api.plans.free.period is 30, a number without a unit, which Spring Boot "
                                        + "reads as 30 milliseconds: write the unit (30s, 30m or 30ms if milliseconds are "
                                        + "meant)",
                                "throttle.policies.fw.window is 60, a number without a unit, which Spring Boot reads as 60 "
                                        + "milliseconds: write the unit (60s, 60m or 60ms if milliseconds are meant)"));
    }

    @Test
    void aParameterMeaninglessForTheAlgorithmFails() {
        failsWith(
                "throttle.policies.api.capacity means nothing to the gcra algorithm, which takes limit, period",
                "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=3",
                "throttle.policies.api.period=1m",
                "throttle.policies.api.capacity=5");
    }

    @Test
    void aMisspelledPropertyFailsInsteadOfLeavingTheDefaultInForce() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.tb.algorithm=token-bucket",
                        "throttle.policies.tb.capacity=10",
                        "throttle.policies.tb.refill-period=1s",
                        "throttle.policies.tb.refil-tokens=5")
                .run((context) -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .hasStackTraceContaining("throttle.policies.tb.refil-tokens"));
    }

    @Test
    void emptyTimeoutsFail() {
        failsWith(
                "throttle.policies.login.timeouts must list at least one duration",
                "throttle.policies.login.algorithm=lockout",
                "throttle.policies.login.timeouts=");
    }

    @Test
    void anExpiryShorterThanTheLockoutFails() {
        failsWith(
                "throttle.policies.login.expire-after must be at least the longest timeout (300s), was 60s; "
                        + "otherwise a locked-out key would be forgotten mid-lockout",
                "throttle.policies.login.algorithm=lockout",
                "throttle.policies.login.timeouts=1s,300s",
                "throttle.policies.login.expire-after=1m");
    }

    @Test
    void anAnnotationNamingAnUnconfiguredPolicyFailsAtStartupNamingMethodPolicyAndProperty() {
        this.contextRunner
                .withBean(UnknownPolicy.class)
                .withPropertyValues(
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=3",
                        "throttle.policies.api.period=1m")
                .run(
                        (context) -> assertThat(configurationFailure(context))
                                .hasMessage(
                                        "@Throttled(policy = \"nope\", key = \"#email\") on UnknownPolicy.call(String) names policy "
                                                + "'nope', which is not configured: add throttle.policies.nope.algorithm (configured: api)"));
    }

    @Test
    void aKeyExpressionThatDoesNotParseFailsAtStartup() {
        this.contextRunner
                .withBean(BadExpression.class)
                .withPropertyValues(
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=3",
                        "throttle.policies.api.period=1m")
                .run((context) -> assertThat(configurationFailure(context))
                        .hasMessageStartingWith(
                                "@Throttled(policy = \"api\", key = \"#form.\") on BadExpression.call(String): "
                                        + "the key expression does not parse"));
    }

    @Test
    void aCostThePolicyCanNeverGrantFailsAtStartup() {
        this.contextRunner
                .withBean(TooCostly.class)
                .withPropertyValues(
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=3",
                        "throttle.policies.api.period=1m")
                .run((context) -> assertThat(configurationFailure(context))
                        .hasMessageContaining("has cost 4, but policy 'api' (gcra) can only grant a cost from 1 to 3"));
    }

    @Test
    void anAnnotationOnARecordFailsWithTheStartersMessageAndEveryOtherMistake() {
        this.contextRunner
                .withBean(ThrottledRecord.class, () -> new ThrottledRecord("x"))
                .withBean(FinalMethod.class)
                .withPropertyValues(
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=3",
                        "throttle.policies.api.period=1m")
                .run((context) -> {
                    Throwable failure = configurationFailure(context);
                    assertThat(failure)
                            .hasMessageContaining(
                                    "@Throttled on ThrottledRecord.call() would never apply: ThrottledRecord is "
                                            + "a final class (a record, or a Kotlin class that is not open, is one), which Spring AOP "
                                            + "cannot subclass to intercept its calls; make it a class that is not final")
                            .hasMessageContaining("@Throttled on FinalMethod.call() would never apply");
                    assertThat(((ThrottleConfigurationException) failure).problems())
                            .hasSize(2);
                });
    }

    @Test
    void aFinalClassWhoseThrottledMethodAnInterfaceDeclaresIsProxiedThroughTheInterface() {
        this.contextRunner
                .withBean(Greeter.class, FinalGreeter::new)
                .withPropertyValues(
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=1",
                        "throttle.policies.api.period=1m")
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    Greeter greeter = context.getBean(Greeter.class);
                    assertThat(greeter.greet()).isEqualTo("hi");
                    assertThatExceptionOfType(dev.throttle.ThrottledException.class)
                            .isThrownBy(greeter::greet);
                });
    }

    @Test
    void anAnnotationOnAMethodThatCannotBeInterceptedFailsInsteadOfSilentlyDoingNothing() {
        this.contextRunner
                .withBean(FinalMethod.class)
                .withPropertyValues(
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=3",
                        "throttle.policies.api.period=1m")
                .run((context) -> assertThat(configurationFailure(context))
                        .hasMessageContaining("@Throttled on FinalMethod.call() would never apply"));
    }

    @Test
    void webApplicationsGetTheRequestContextAndTheExceptionHandler() {
        new WebApplicationContextRunner()
                .withConfiguration(
                        AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleWebMvcAutoConfiguration.class))
                .run((context) -> assertThat(context)
                        .hasSingleBean(ServletThrottleRequestContext.class)
                        .hasSingleBean(ThrottleExceptionHandler.class));
    }

    @Test
    void webBeansBackOff() {
        ThrottleExceptionHandler handler = new ThrottleExceptionHandler(false);
        new WebApplicationContextRunner()
                .withConfiguration(
                        AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleWebMvcAutoConfiguration.class))
                .withBean(ThrottleExceptionHandler.class, () -> handler)
                .withBean(ThrottleRequestContext.class, () -> ThrottleRequestContext.NONE)
                .run((context) -> {
                    assertThat(context.getBean(ThrottleExceptionHandler.class)).isSameAs(handler);
                    assertThat(context.getBean(ThrottleRequestContext.class)).isSameAs(ThrottleRequestContext.NONE);
                });
    }

    @Test
    void nonWebApplicationsGetNoWebBeans() {
        new ApplicationContextRunner()
                .withConfiguration(
                        AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleWebMvcAutoConfiguration.class))
                .run((context) -> assertThat(context)
                        .hasSingleBean(Throttler.class)
                        .doesNotHaveBean(ThrottleExceptionHandler.class));
    }

    private void failsWith(String message, String... properties) {
        this.contextRunner
                .withPropertyValues(properties)
                .run((context) -> assertThat(configurationFailure(context)).hasMessage(message));
    }

    private static Throwable configurationFailure(
            org.springframework.boot.test.context.assertj.AssertableApplicationContext context) {
        assertThat(context).hasFailed();
        for (Throwable current = context.getStartupFailure(); current != null; current = current.getCause()) {
            if (current instanceof ThrottleConfigurationException) {
                return current;
            }
        }
        throw new AssertionError("no ThrottleConfigurationException in", context.getStartupFailure());
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnBeans {

        static final ManualTimeSource CLOCK = new ManualTimeSource();

        static final ThrottleStore STORE = new MemoryThrottleStore(CLOCK, 10);

        static final Throttler THROTTLER = new Throttler(STORE, List.of());

        @Bean
        TimeSource ownClock() {
            return CLOCK;
        }

        @Bean
        ThrottleStore ownStore() {
            return STORE;
        }

        @Bean
        Throttler ownThrottler() {
            return THROTTLER;
        }

        @Bean
        ThrottledMethods ownThrottledMethods() {
            return new ThrottledMethods(Admissions.of(THROTTLER));
        }

        @Bean
        static ThrottledAdvisor ownThrottledAdvisor(
                ObjectProvider<Throttler> throttler,
                ObjectProvider<ThrottledMethods> methods,
                ObjectProvider<ThrottleRequestContext> requestContext,
                ObjectProvider<ReactiveThrottleRequestContext> reactiveRequestContext) {
            return new ThrottledAdvisor(throttler, methods, requestContext, reactiveRequestContext);
        }
    }

    static class UnknownPolicy {

        @Throttled(policy = "nope", key = "#email")
        public void call(String email) {}
    }

    static class BadExpression {

        @Throttled(policy = "api", key = "#form.")
        public void call(String form) {}
    }

    static class TooCostly {

        @Throttled(policy = "api", cost = 4)
        public void call() {}
    }

    record ThrottledRecord(String name) {

        @Throttled(policy = "api")
        public void call() {}
    }

    interface Greeter {

        String greet();
    }

    static final class FinalGreeter implements Greeter {

        @Override
        @Throttled(policy = "api")
        public String greet() {
            return "hi";
        }
    }

    static class FinalMethod {

        @Throttled(policy = "api")
        public final void call() {}
    }
}
