package dev.throttle.spring.internal.aop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.expression.AccessException;
import org.springframework.expression.spel.support.StandardEvaluationContext;

/** {@code @name} in an expression: a singleton asked of the bean factory once, any other scope every time. */
class SingletonBeansTests {

    private final AtomicInteger made = new AtomicInteger();

    private final DefaultListableBeanFactory factory = new DefaultListableBeanFactory();

    private final StandardEvaluationContext context = new StandardEvaluationContext();

    @Test
    void aSingletonIsTheBeanFactorysOwnAndAskedOnce() throws Exception {
        RootBeanDefinition plans = new RootBeanDefinition(StringBuilder.class);
        plans.setLazyInit(true);
        this.factory.registerBeanDefinition("plans", plans);
        SingletonBeans beans = new SingletonBeans(this.factory);
        Object first = beans.resolve(this.context, "plans");
        assertThat(first).isSameAs(this.factory.getBean("plans"));
        this.factory.destroySingletons();
        assertThat(beans.resolve(this.context, "plans")).isSameAs(first);
    }

    @Test
    void aPrototypeIsMadeAnewEachTimeAsTheBeanFactoryMakesIt() throws Exception {
        RootBeanDefinition counter = new RootBeanDefinition(Object.class, () -> this.made.incrementAndGet());
        counter.setScope(BeanDefinition.SCOPE_PROTOTYPE);
        this.factory.registerBeanDefinition("counter", counter);
        SingletonBeans beans = new SingletonBeans(this.factory);
        assertThat(beans.resolve(this.context, "counter")).isEqualTo(1);
        assertThat(beans.resolve(this.context, "counter")).isEqualTo(2);
    }

    @Test
    void anUnknownBeanFailsAsTheBeanFactoryResolverFails() {
        SingletonBeans beans = new SingletonBeans(this.factory);
        assertThatExceptionOfType(AccessException.class).isThrownBy(() -> beans.resolve(this.context, "nothing"));
    }
}
