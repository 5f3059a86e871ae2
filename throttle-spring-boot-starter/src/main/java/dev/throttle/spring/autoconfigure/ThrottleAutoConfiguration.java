package dev.throttle.spring.autoconfigure;

import dev.throttle.DecisionObserver;
import dev.throttle.ThrottleListener;
import dev.throttle.ThrottleStore;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.bans.BanListener;
import dev.throttle.spring.bans.Bans;
import dev.throttle.spring.bans.SharedBans;
import dev.throttle.spring.fleet.SharedPolicyChanges;
import dev.throttle.spring.internal.aop.ThrottledAdvisor;
import dev.throttle.spring.internal.aop.ThrottledMethods;
import dev.throttle.spring.internal.request.PolicyModes;
import dev.throttle.spring.internal.request.ReactiveThrottleRequestContext;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import dev.throttle.spring.internal.web.BanGate;
import dev.throttle.spring.internal.web.ClientAccess;
import java.time.Duration;
import java.util.Map;
import org.springframework.aop.config.AopConfigUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.ApplicationEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.core.io.ResourceLoader;
import org.springframework.core.type.AnnotationMetadata;

/**
 * Auto-configuration of throttling: policies from {@code throttle.policies}, a store (memory by
 * default, Redis with {@code throttle.store.type=redis}, PostgreSQL with {@code throttle.store.type=jdbc}), the {@link Throttler}, and the advisor
 * that applies {@link Throttled}. Every bean backs off when the application defines its own.
 */
@AutoConfiguration(
        afterName = {
            "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration",
            "org.springframework.boot.data.redis.autoconfigure.DataRedisReactiveAutoConfiguration",
            "org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration",
            "org.springframework.boot.autoconfigure.data.redis.RedisReactiveAutoConfiguration",
            "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
            "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration"
        })
@ConditionalOnBooleanProperty(name = "throttle.enabled", matchIfMissing = true)
@EnableConfigurationProperties(ThrottleProperties.class)
@Import({
    ThrottleAutoConfiguration.AutoProxyRegistrar.class,
    MemoryStoreConfiguration.class,
    RedisStoreConfiguration.class,
    RedisStoreConfiguration.RedisMissingConfiguration.class,
    JdbcStoreConfiguration.class
})
public final class ThrottleAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    TimeSource throttleTimeSource() {
        return TimeSource.system();
    }

    @Bean
    @ConditionalOnMissingBean
    Throttler throttler(
            ThrottleProperties properties,
            ThrottleStore throttleStore,
            ObjectProvider<ThrottleListener> listeners,
            ObjectProvider<DecisionObserver> observer) {
        // only the valid policies: the startup check reports the others with every other mistake, at once
        PolicyFactory.Policies policies = PolicyFactory.read(properties.getPolicies());
        return new Throttler(
                throttleStore,
                policies.valid(),
                policies.plans(),
                listeners.orderedStream().toList(),
                observer.getIfUnique());
    }

    /**
     * Which policies are in shadow mode: {@code throttle.policies.<name>.mode}, else {@code throttle.mode}.
     */
    @Bean
    @ConditionalOnMissingBean
    PolicyModes throttlePolicyModes(ThrottleProperties properties) {
        PolicyModes modes = new PolicyModes();
        properties.getPolicies().forEach((name, policy) -> modes.set(name, isShadow(properties, policy)));
        return modes;
    }

    static boolean isShadow(ThrottleProperties properties, ThrottleProperties.Policy policy) {
        ThrottleProperties.Mode mode = (policy.getMode() != null) ? policy.getMode() : properties.getMode();
        return mode == ThrottleProperties.Mode.SHADOW;
    }

    /**
     * Changes policies at run time: the actuator, the environment, or the application itself.
     */
    @Bean
    @ConditionalOnMissingBean
    ThrottlePolicies throttlePolicies(
            Throttler throttler,
            ThrottleProperties properties,
            PolicyModes modes,
            ObjectProvider<SharedPolicyChanges> shared) {
        ThrottlePolicies policies = new ThrottlePolicies(throttler, properties, modes);
        shared.ifAvailable(policies::shareThrough);
        return policies;
    }

    @Bean
    static ApplicationListener<ApplicationEvent> throttleEnvironmentChanges(
            ObjectProvider<ThrottlePolicies> policies, Environment environment) {
        return new ThrottleEnvironmentChanges(policies, environment);
    }

    /**
     * The charges of the configured policies, as configured: what every entry point decides and
     * settles through, an application's own included.
     */
    @Bean
    @ConditionalOnMissingBean
    Admissions throttleAdmissions(Throttler throttler, ThrottleProperties properties, PolicyModes modes) {
        Map<String, ThrottleProperties.Policy> policies = properties.getPolicies();
        return new Admissions(
                throttler,
                (name) -> (policies.get(name) != null) ? policies.get(name).onSuccess() : null,
                modes::of,
                (name) -> (policies.get(name) != null) ? policies.get(name).waitOrZero() : Duration.ZERO,
                (name) -> (policies.get(name) != null) ? policies.get(name).getMaxDebt() : null);
    }

    @Bean
    @ConditionalOnMissingBean
    ThrottledMethods throttledMethods(Admissions admissions, ResourceLoader resourceLoader, BeanFactory beanFactory) {
        ThrottledMethods methods = new ThrottledMethods(admissions, resourceLoader.getClassLoader());
        methods.setBeanFactory(beanFactory);
        return methods;
    }

    /**
     * The bans of {@code throttle.bans}, checked at startup: refusals counted in the store, active
     * bans held in memory, and on a store a fleet shares, stored and heard by every instance.
     */
    @Bean
    @ConditionalOnMissingBean
    Bans throttleBans(
            ThrottleProperties properties,
            ThrottleStore throttleStore,
            TimeSource throttleTimeSource,
            ObjectProvider<SharedBans> shared,
            ObjectProvider<BanListener> listeners) {
        BansFactory.Read read = BansFactory.read(properties);
        Bans bans = new Bans(
                read.rules(),
                throttleStore,
                throttleTimeSource,
                read.rules().isEmpty() ? null : shared.getIfAvailable(),
                listeners.orderedStream().toList());
        bans.listen();
        return bans;
    }

    /**
     * What the web filters and refusal writers do with bans, the key expressions parsed once.
     */
    @Bean
    @ConditionalOnMissingBean
    BanGate throttleBanGate(Bans bans, ThrottleProperties properties, ClientAccess access) {
        return new BanGate(
                bans,
                BansFactory.read(properties).keys(),
                access,
                properties.getHttp().getIpv6Prefix());
    }

    /**
     * The safelist and blocklist of client addresses, parsed (and checked) at startup.
     */
    @Bean
    @ConditionalOnMissingBean
    ClientAccess throttleClientAccess(ThrottleProperties properties) {
        return new ClientAccess(
                properties.getHttp().getSafelist(), properties.getHttp().getBlocklist());
    }

    /**
     * The advisor, ordered by {@code throttle.aop.order}. Bound from the environment rather than
     * from {@link ThrottleProperties}: advisors are made while post-processors are still being
     * created, too early for a properties bean.
     */
    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    @ConditionalOnMissingBean
    static ThrottledAdvisor throttledAdvisor(
            Environment environment,
            ObjectProvider<ThrottledMethods> throttledMethods,
            ObjectProvider<ThrottleRequestContext> requestContext,
            ObjectProvider<ReactiveThrottleRequestContext> reactiveRequestContext) {
        ThrottledAdvisor advisor = new ThrottledAdvisor(throttledMethods, requestContext, reactiveRequestContext);
        advisor.setOrder(Binder.get(environment)
                .bindOrCreate("throttle.aop", ThrottleProperties.Aop.class)
                .getOrder());
        return advisor;
    }

    /**
     * Checks every policy and every {@code @Throttled} of every bean once all singletons exist and
     * before the web server starts, reporting every mistake at once, then logs the startup line.
     * (Boot never makes a SmartInitializingSingleton lazy, so lazy initialization keeps the check.)
     */
    @Bean
    static SmartInitializingSingleton throttledMethodsValidator(
            ListableBeanFactory beanFactory,
            ObjectProvider<ThrottleProperties> properties,
            ObjectProvider<Throttler> throttler,
            ObjectProvider<ThrottledMethods> throttledMethods,
            ObjectProvider<ThrottledAdvisor> advisor) {
        return new ThrottleStartupCheck(beanFactory, properties, throttler, throttledMethods, advisor);
    }

    /**
     * Makes sure some auto-proxy creator exists to apply the (infrastructure) advisor, even when
     * {@code spring.aop.auto=false}; an existing one is kept.
     */
    static class AutoProxyRegistrar implements ImportBeanDefinitionRegistrar {

        @Override
        public void registerBeanDefinitions(AnnotationMetadata metadata, BeanDefinitionRegistry registry) {
            AopConfigUtils.registerAutoProxyCreatorIfNecessary(registry);
        }
    }
}
