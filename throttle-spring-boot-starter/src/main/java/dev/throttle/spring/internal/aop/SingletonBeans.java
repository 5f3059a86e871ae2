package dev.throttle.spring.internal.aop;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.expression.AccessException;
import org.springframework.expression.BeanResolver;
import org.springframework.expression.EvaluationContext;

/**
 * Resolves {@code @name} in key, plan and cost expressions as {@link BeanFactoryResolver} does,
 * remembering the singletons it resolved. An expression such as {@code @apiKeys.planOf(#apiKey)}
 * runs on every throttled call, and asking the bean factory each time (the name's aliases, the
 * singleton registry, the factory-bean check) costs more than the rest of a short expression; a
 * singleton is the same object for the bean factory's whole life, which this resolver does not
 * outlive. Any other scope is asked every time. The names come from annotations, so the map stays
 * as small as they are. Thread-safe.
 */
final class SingletonBeans implements BeanResolver {

    private final BeanFactory beanFactory;

    private final BeanFactoryResolver resolver;

    private final Map<String, Object> singletons = new ConcurrentHashMap<>();

    SingletonBeans(BeanFactory beanFactory) {
        this.beanFactory = beanFactory;
        this.resolver = new BeanFactoryResolver(beanFactory);
    }

    @Override
    public Object resolve(EvaluationContext context, String beanName) throws AccessException {
        Object bean = this.singletons.get(beanName);
        if (bean != null) {
            return bean;
        }
        bean = this.resolver.resolve(context, beanName);
        try {
            if (this.beanFactory.isSingleton(beanName)) {
                this.singletons.putIfAbsent(beanName, bean);
            }
        } catch (BeansException ex) {
            // not told: asked again next time, as without this memory
        }
        return bean;
    }
}
