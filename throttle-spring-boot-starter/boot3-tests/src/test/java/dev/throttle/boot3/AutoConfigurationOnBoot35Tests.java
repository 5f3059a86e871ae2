package dev.throttle.boot3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.actuate.ThrottleEndpoint;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleEndpointAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleMetricsAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleWebFluxAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleWebMvcAutoConfiguration;
import dev.throttle.spring.internal.web.ServletThrottleRequestContext;
import dev.throttle.spring.internal.web.WebFluxThrottleRequestContext;
import dev.throttle.spring.metrics.MicrometerThrottleListener;
import dev.throttle.spring.web.ThrottleExceptionHandler;
import dev.throttle.testing.redis.SharedRedis;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.aop.aspectj.annotation.AnnotationAwareAspectJAutoProxyCreator;
import org.springframework.aop.config.AopConfigUtils;
import org.springframework.aop.support.AopUtils;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionEvaluationReport;
import org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration;
import org.springframework.boot.autoconfigure.data.redis.RedisReactiveAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.SpringVersion;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.util.ClassUtils;
import org.springframework.web.filter.reactive.ServerWebExchangeContextFilter;

/**
 * The starter's five auto-configurations, loaded from its {@code AutoConfiguration.imports} by
 * {@code @EnableAutoConfiguration} in Boot 3.5 applications: which load, in which order relative
 * to Boot 3.5's own, and how a bad configuration fails at startup.
 */
class AutoConfigurationOnBoot35Tests {

    private static final String[] POLICIES = {
        "throttle.policies.api.algorithm=gcra", "throttle.policies.api.limit=1", "throttle.policies.api.period=1m"
    };

    private final WebApplicationContextRunner servlet = new WebApplicationContextRunner()
            .withUserConfiguration(Application.class)
            .withPropertyValues(POLICIES)
            .withPropertyValues("management.endpoints.web.exposure.include=throttle");

    @Test
    void theseTestsRunOnSpringBoot35WithFramework62AndJackson2() {
        assertThat(SpringBootVersion.getVersion()).startsWith("3.5.");
        assertThat(SpringVersion.getVersion()).startsWith("6.2.");
        ClassLoader loader = getClass().getClassLoader();
        assertThat(ClassUtils.isPresent("com.fasterxml.jackson.databind.ObjectMapper", loader))
                .isTrue();
        assertThat(ClassUtils.isPresent("tools.jackson.databind.ObjectMapper", loader))
                .as("Jackson 3")
                .isFalse();
        assertThat(ClassUtils.isPresent(
                        "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration", loader))
                .as("Boot 4's Redis auto-configuration")
                .isFalse();
    }

    @Test
    void inAServletApplicationTheCoreWebMvcMetricsAndEndpointAutoConfigurationsMatch() {
        this.servlet.run((context) -> {
            assertThat(context)
                    .hasNotFailed()
                    .hasSingleBean(Throttler.class)
                    .hasSingleBean(MemoryThrottleStore.class)
                    .hasSingleBean(ServletThrottleRequestContext.class)
                    .hasSingleBean(ThrottleExceptionHandler.class)
                    .hasSingleBean(MicrometerThrottleListener.class)
                    .hasSingleBean(ThrottleEndpoint.class)
                    .doesNotHaveBean(WebFluxThrottleRequestContext.class);
            assertThat(matched(context, ThrottleAutoConfiguration.class)).isTrue();
            assertThat(matched(context, ThrottleWebMvcAutoConfiguration.class)).isTrue();
            assertThat(matched(context, ThrottleMetricsAutoConfiguration.class)).isTrue();
            assertThat(matched(context, ThrottleEndpointAutoConfiguration.class))
                    .isTrue();
            assertThat(matched(context, ThrottleWebFluxAutoConfiguration.class))
                    .as("not a reactive application")
                    .isFalse();
        });
    }

    @Test
    void inAReactiveApplicationTheWebFluxAutoConfigurationMatchesInsteadOfWebMvc() {
        new ReactiveWebApplicationContextRunner()
                .withUserConfiguration(Application.class)
                .withPropertyValues(POLICIES)
                .run((context) -> {
                    assertThat(context)
                            .hasNotFailed()
                            .hasSingleBean(Throttler.class)
                            .hasSingleBean(WebFluxThrottleRequestContext.class)
                            .hasSingleBean(ServerWebExchangeContextFilter.class)
                            .hasSingleBean(ThrottleExceptionHandler.class)
                            .hasSingleBean(MicrometerThrottleListener.class)
                            .doesNotHaveBean(ServletThrottleRequestContext.class);
                    assertThat(matched(context, ThrottleWebFluxAutoConfiguration.class))
                            .isTrue();
                    assertThat(matched(context, ThrottleWebMvcAutoConfiguration.class))
                            .isFalse();
                });
    }

    @Test
    void throttleAutoConfigurationsRunAfterBoot35sRedisAndMeterRegistryAutoConfigurations() {
        this.servlet.run((context) -> {
            List<String> order = Arrays.asList(context.getBeanFactory().getBeanDefinitionNames());
            assertThat(order)
                    .containsSubsequence(
                            "org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration",
                            ThrottleAutoConfiguration.class.getName());
            assertThat(order)
                    .containsSubsequence(
                            "org.springframework.boot.autoconfigure.data.redis.RedisReactiveAutoConfiguration",
                            ThrottleAutoConfiguration.class.getName());
            assertThat(order)
                    .containsSubsequence(
                            "org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration",
                            "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
                            ThrottleMetricsAutoConfiguration.class.getName());
            assertThat(order)
                    .containsSubsequence(
                            ThrottleAutoConfiguration.class.getName(),
                            ThrottleEndpointAutoConfiguration.class.getName());
        });
    }

    @Test
    void theRedisStoreUsesTheConnectionFactoryOfBoot35sRedisAutoConfiguration() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(
                        ThrottleAutoConfiguration.class,
                        RedisReactiveAutoConfiguration.class,
                        RedisAutoConfiguration.class))
                .withPropertyValues(POLICIES)
                .withPropertyValues(
                        "throttle.store.type=redis",
                        "spring.data.redis.url=" + SharedRedis.endpoint().url())
                .run((context) -> {
                    assertThat(context).hasNotFailed().hasSingleBean(ResilientThrottleStore.class);
                    assertThat(context)
                            .getBean("redisConnectionFactory")
                            .isInstanceOf(ReactiveRedisConnectionFactory.class);
                    SharedRedis.flush();
                    Throttler throttler = context.getBean(Throttler.class);
                    assertThat(throttler.tryAcquire("api", "carol").allowed()).isTrue();
                    assertThat(throttler.tryAcquire("api", "carol").allowed()).isFalse();
                    assertThat(context.getBean(ResilientThrottleStore.class).isStoreDown())
                            .isFalse();
                    try (var client = SharedRedis.endpoint().newClient();
                            var connection = client.connect()) {
                        assertThat(connection.sync().exists("throttle:{api:carol}"))
                                .isEqualTo(1);
                    }
                });
    }

    @Test
    void boot35sAspectJAutoProxyCreatorAppliesThrottledToAPlainBean() {
        new ApplicationContextRunner()
                .withUserConfiguration(Application.class)
                .withBean(AccountService.class)
                .withPropertyValues(POLICIES)
                .run((context) -> {
                    assertThat(context.getBean(AopConfigUtils.AUTO_PROXY_CREATOR_BEAN_NAME))
                            .isInstanceOf(AnnotationAwareAspectJAutoProxyCreator.class);
                    AccountService service = context.getBean(AccountService.class);
                    assertThat(AopUtils.isAopProxy(service)).isTrue();
                    assertThat(service.login("alice@example.com")).isEqualTo("welcome");
                    assertThat(service.login("bob@example.com"))
                            .as("another key")
                            .isEqualTo("welcome");
                    assertThatExceptionOfType(ThrottledException.class)
                            .isThrownBy(() -> service.login("alice@example.com"))
                            .satisfies((ex) -> assertThat(ex.getPolicy().name()).isEqualTo("api"));
                });
    }

    @Test
    void withSpringAopAutoOffThrottledStillApplies() {
        new ApplicationContextRunner()
                .withUserConfiguration(Application.class)
                .withBean(AccountService.class)
                .withPropertyValues(POLICIES)
                .withPropertyValues("spring.aop.auto=false")
                .run((context) -> {
                    AccountService service = context.getBean(AccountService.class);
                    service.login("alice@example.com");
                    assertThatExceptionOfType(ThrottledException.class)
                            .isThrownBy(() -> service.login("alice@example.com"));
                });
    }

    @Test
    void withoutAspectJOnTheClasspathThrottledStillApplies() {
        new ApplicationContextRunner()
                .withUserConfiguration(Application.class)
                .withClassLoader(new FilteredClassLoader("org.aspectj"))
                .withBean(AccountService.class)
                .withPropertyValues(POLICIES)
                .run((context) -> {
                    assertThat(context.getBean(AopConfigUtils.AUTO_PROXY_CREATOR_BEAN_NAME))
                            .isNotInstanceOf(AnnotationAwareAspectJAutoProxyCreator.class);
                    AccountService service = context.getBean(AccountService.class);
                    service.login("alice@example.com");
                    assertThatExceptionOfType(ThrottledException.class)
                            .isThrownBy(() -> service.login("alice@example.com"));
                });
    }

    @Test
    void anAnnotationNamingAnUnconfiguredPolicyStopsTheApplicationAtStartupNamingMethodPolicyAndProperty() {
        SpringApplicationBuilder application = new SpringApplicationBuilder(Application.class, UnknownPolicy.class)
                .web(WebApplicationType.NONE)
                .properties(POLICIES);
        assertThatThrownBy(application::run)
                .satisfies(
                        (failure) -> assertThat(configurationFailure(failure))
                                .hasMessage(
                                        "@Throttled(policy = \"nope\", key = \"#email\") on UnknownPolicy.call(String) names policy "
                                                + "'nope', which is not configured: add throttle.policies.nope.algorithm (configured: api)"));
    }

    @Test
    void aZeroCapacityStopsTheApplicationAtStartupNamingTheProperty() {
        SpringApplicationBuilder application = new SpringApplicationBuilder(Application.class)
                .web(WebApplicationType.NONE)
                .properties(
                        "throttle.policies.ip.algorithm=token-bucket",
                        "throttle.policies.ip.capacity=0",
                        "throttle.policies.ip.refill-period=1s");
        assertThatThrownBy(application::run)
                .satisfies((failure) -> assertThat(configurationFailure(failure))
                        .hasMessage("throttle.policies.ip.capacity must be between 1 and 8388607, was 0"));
    }

    @Test
    void aNegativeDurationFailsNamingTheProperty() {
        new ApplicationContextRunner()
                .withUserConfiguration(Application.class)
                .withPropertyValues(
                        "throttle.policies.fw.algorithm=fixed-window",
                        "throttle.policies.fw.limit=3",
                        "throttle.policies.fw.window=-5s")
                .run((context) -> assertThat(configurationFailure(context))
                        .hasMessage("throttle.policies.fw.window must be positive, was PT-5S"));
    }

    @Test
    void aNumberThatIsNotANumberFailsNamingTheProperty() {
        new ApplicationContextRunner()
                .withUserConfiguration(Application.class)
                .withPropertyValues(
                        "throttle.policies.ip.algorithm=token-bucket",
                        "throttle.policies.ip.capacity=lots",
                        "throttle.policies.ip.refill-period=1s")
                .run((context) -> {
                    assertThat(context).hasFailed();
                    StringBuilder messages = new StringBuilder();
                    for (Throwable current = context.getStartupFailure();
                            current != null;
                            current = current.getCause()) {
                        messages.append(current.getMessage()).append('\n');
                    }
                    assertThat(messages)
                            .contains("throttle.policies.ip.capacity")
                            .contains("lots");
                });
    }

    @Test
    void redisStoreWithoutSpringDataRedisFailsAtStartupSayingWhatToAdd() {
        new ApplicationContextRunner()
                .withClassLoader(new FilteredClassLoader("org.springframework.data.redis"))
                .withConfiguration(AutoConfigurations.of(ThrottleAutoConfiguration.class))
                .withPropertyValues("throttle.store.type=redis")
                .run((context) -> assertThat(configurationFailure(context))
                        .hasMessageContaining("throttle.store.type=redis needs Spring Data Redis on the classpath")
                        .hasMessageContaining("spring-boot-starter-data-redis"));
    }

    private static boolean matched(ConfigurableApplicationContext context, Class<?> autoConfiguration) {
        ConditionEvaluationReport report = ConditionEvaluationReport.get(context.getBeanFactory());
        ConditionEvaluationReport.ConditionAndOutcomes outcomes =
                report.getConditionAndOutcomesBySource().get(autoConfiguration.getName());
        return outcomes != null && outcomes.isFullMatch();
    }

    private static Throwable configurationFailure(AssertableApplicationContext context) {
        assertThat(context).hasFailed();
        return configurationFailure(context.getStartupFailure());
    }

    private static Throwable configurationFailure(Throwable failure) {
        for (Throwable current = failure; current != null; current = current.getCause()) {
            if (current instanceof ThrottleConfigurationException) {
                return current;
            }
        }
        throw new AssertionError("no ThrottleConfigurationException in", failure);
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class Application {}

    /** Public: the AOP proxy of the FilteredClassLoader test is defined in another class loader. */
    public static class AccountService {

        @Throttled(policy = "api", key = "#email")
        public String login(String email) {
            return "welcome";
        }
    }

    static class UnknownPolicy {

        @Throttled(policy = "nope", key = "#email")
        public void call(String email) {}
    }
}
