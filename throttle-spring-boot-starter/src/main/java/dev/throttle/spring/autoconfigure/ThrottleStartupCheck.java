package dev.throttle.spring.autoconfigure;

import dev.throttle.Throttler;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.internal.aop.ThrottledAdvisor;
import dev.throttle.spring.internal.aop.ThrottledMethods;
import java.lang.reflect.AnnotatedElement;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.springframework.aop.MethodMatcher;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.SingletonBeanRegistry;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Checks the throttling configuration once all singletons exist and before the web server starts,
 * so that a mistake fails startup instead of the first request: every {@code throttle.policies}
 * entry, and (when throttling is on) every {@code @Throttled} of every bean. It reports every
 * mistake it finds in one {@link ThrottleConfigurationException}, so that one restart checks every
 * fix, and otherwise logs the one startup line ({@link ThrottleStartupLog}).
 */
final class ThrottleStartupCheck implements SmartInitializingSingleton {

    private final ListableBeanFactory beanFactory;

    private final boolean enabled;

    private final ObjectProvider<ThrottleProperties> properties;

    private final ObjectProvider<Throttler> throttler;

    private final ObjectProvider<ThrottledMethods> throttledMethods;

    private final ObjectProvider<ThrottledAdvisor> advisor;

    /**
     * Creates the check of a context where throttling is on.
     */
    ThrottleStartupCheck(
            ListableBeanFactory beanFactory,
            ObjectProvider<ThrottleProperties> properties,
            ObjectProvider<Throttler> throttler,
            ObjectProvider<ThrottledMethods> throttledMethods,
            ObjectProvider<ThrottledAdvisor> advisor) {
        this(beanFactory, true, properties, throttler, throttledMethods, advisor);
    }

    private ThrottleStartupCheck(
            ListableBeanFactory beanFactory,
            boolean enabled,
            ObjectProvider<ThrottleProperties> properties,
            ObjectProvider<Throttler> throttler,
            ObjectProvider<ThrottledMethods> throttledMethods,
            ObjectProvider<ThrottledAdvisor> advisor) {
        this.beanFactory = beanFactory;
        this.enabled = enabled;
        this.properties = properties;
        this.throttler = throttler;
        this.throttledMethods = throttledMethods;
        this.advisor = advisor;
    }

    /**
     * Creates the check of a context where throttling is off: the policies only, which are still
     * worth checking where throttling is off (a developer's machine, a test) before they reach a
     * machine where it is on. No store, no throttler.
     */
    static ThrottleStartupCheck policiesOnly(
            ListableBeanFactory beanFactory, ObjectProvider<ThrottleProperties> properties) {
        ObjectProvider<Throttler> throttler = beanFactory.getBeanProvider(Throttler.class);
        ObjectProvider<ThrottledMethods> methods = beanFactory.getBeanProvider(ThrottledMethods.class);
        ObjectProvider<ThrottledAdvisor> advisor = beanFactory.getBeanProvider(ThrottledAdvisor.class);
        return new ThrottleStartupCheck(beanFactory, false, properties, throttler, methods, advisor);
    }

    @Override
    public void afterSingletonsInstantiated() {
        ThrottleProperties settings = this.properties.getIfAvailable();
        PolicyFactory.Policies policies = PolicyFactory.read((settings != null) ? settings.getPolicies() : Map.of());
        Set<String> problems = new LinkedHashSet<>(policies.problems());
        problems.addAll(BareDurations.problems(
                this.beanFactory.getBeanProvider(Environment.class).getIfAvailable()));
        if (!this.enabled) {
            failOn(problems);
            ThrottleStartupLog.disabled(policies.valid());
            return;
        }
        ThrottledMethods methods = this.throttledMethods.getIfAvailable();
        ThrottledAdvisor advisor = this.advisor.getIfUnique();
        Set<Method> throttled = new HashSet<>();
        if (methods != null) {
            for (Class<?> type : annotatedTypes()) {
                // an annotation naming a policy with a mistake cannot be checked until the policy is
                // fixed, and would only be reported again as naming a policy that is not configured
                if (namesAny(type, policies.invalid())) {
                    continue;
                }
                try {
                    methods.validate(type);
                    if (advisor != null && !type.isInterface()) {
                        collectThrottled(type, advisor.getPointcut().getMethodMatcher(), throttled);
                    }
                } catch (ThrottleConfigurationException ex) {
                    problems.addAll(ex.problems());
                }
            }
        }
        failOn(problems);
        Throttler throttler = this.throttler.getIfUnique();
        if (throttler != null) {
            ThrottleStartupLog.enabled(this.beanFactory, throttler, throttled.size());
        }
    }

    private static void failOn(Set<String> problems) {
        if (!problems.isEmpty()) {
            throw new ThrottleConfigurationException(new ArrayList<>(problems));
        }
    }

    /**
     * The classes to check, each once: every bean's; for a JDK proxy, the interfaces it stands for
     * (its own methods are final and carry no annotations) and, for a singleton already made, the
     * class behind it.
     */
    private Set<Class<?>> annotatedTypes() {
        Set<Class<?>> types = new LinkedHashSet<>();
        for (String name : this.beanFactory.getBeanDefinitionNames()) {
            Class<?> type = this.beanFactory.getType(name, false);
            if (type == null) {
                continue;
            }
            if (Proxy.isProxyClass(type)) {
                for (Class<?> contract : type.getInterfaces()) {
                    addIfAnnotated(contract, types);
                }
                Object instance = (this.beanFactory instanceof SingletonBeanRegistry singletons)
                        ? singletons.getSingleton(name)
                        : null;
                Class<?> target = (instance != null) ? AopUtils.getTargetClass(instance) : null;
                if (target != null && !Proxy.isProxyClass(target)) {
                    addIfAnnotated(target, types);
                }
            } else {
                addIfAnnotated(type, types);
            }
        }
        return types;
    }

    private static void addIfAnnotated(Class<?> type, Set<Class<?>> types) {
        if (AnnotationUtils.isCandidateClass(type, Throttled.class)) {
            types.add(ClassUtils.getUserClass(type));
        }
    }

    private static boolean namesAny(Class<?> type, Set<String> policies) {
        if (policies.isEmpty()) {
            return false;
        }
        List<AnnotatedElement> elements = new ArrayList<>();
        elements.add(type);
        ReflectionUtils.doWithMethods(type, elements::add, ReflectionUtils.USER_DECLARED_METHODS);
        for (AnnotatedElement element : elements) {
            for (Throttled throttled :
                    AnnotatedElementUtils.findMergedRepeatableAnnotations(element, Throttled.class)) {
                if (policies.contains(throttled.policy())) {
                    return true;
                }
            }
        }
        return false;
    }

    /** The methods of a class that the advisor throttles: what the startup line counts. */
    private static void collectThrottled(Class<?> type, MethodMatcher matcher, Set<Method> throttled) {
        ReflectionUtils.doWithMethods(
                type,
                (method) -> {
                    if (matcher.matches(method, type)) {
                        throttled.add(AopUtils.getMostSpecificMethod(method, type));
                    }
                },
                ReflectionUtils.USER_DECLARED_METHODS);
    }
}
