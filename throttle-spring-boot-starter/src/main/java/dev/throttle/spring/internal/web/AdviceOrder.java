package dev.throttle.spring.internal.web;

import dev.throttle.ThrottledException;
import java.lang.reflect.Method;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;

/**
 * Where the starter's refusal advice sits among the application's {@code @ControllerAdvice}:
 * ahead of them by default, so that an application's catch-all {@code @ExceptionHandler(Exception.class)}
 * does not turn a refusal into a 500; behind them when one of them handles
 * {@link ThrottledException} itself, so that the application's own handler wins. Found on first
 * use, when the application's advice beans are all defined. Thread-safe.
 */
final class AdviceOrder {

    /** Ahead of the application's advice (whose default order is the lowest precedence). */
    static final int AHEAD = Ordered.HIGHEST_PRECEDENCE + 100;

    private final @Nullable ListableBeanFactory beanFactory;

    private volatile @Nullable Integer order;

    AdviceOrder(@Nullable BeanFactory beanFactory) {
        this.beanFactory = (beanFactory instanceof ListableBeanFactory listable) ? listable : null;
    }

    /** {@link #AHEAD}, or the lowest precedence when the application handles refusals itself. */
    int get() {
        Integer order = this.order;
        if (order == null) {
            order = (this.beanFactory != null) ? of(this.beanFactory) : AHEAD;
            this.order = order;
        }
        return order;
    }

    private static int of(ListableBeanFactory beanFactory) {
        for (String name : beanFactory.getBeanNamesForAnnotation(ControllerAdvice.class)) {
            Class<?> type = beanFactory.getType(name, false);
            if (type == null) {
                continue;
            }
            Class<?> userType = ClassUtils.getUserClass(type);
            // the starter's own advice, by package: naming the servlet one would load it without the Servlet API
            if (userType.getPackageName().equals(AdviceOrder.class.getPackageName())) {
                continue;
            }
            if (handlesRefusals(userType)) {
                return Ordered.LOWEST_PRECEDENCE;
            }
        }
        return AHEAD;
    }

    /** Whether a class has an {@code @ExceptionHandler} for ThrottledException (or a subclass of it). */
    static boolean handlesRefusals(Class<?> type) {
        boolean[] found = new boolean[1];
        ReflectionUtils.doWithMethods(
                type,
                (method) -> found[0] |= handles(method),
                (method) -> !found[0] && AnnotatedElementUtils.hasAnnotation(method, ExceptionHandler.class));
        return found[0];
    }

    private static boolean handles(Method method) {
        ExceptionHandler annotation = AnnotatedElementUtils.findMergedAnnotation(method, ExceptionHandler.class);
        Class<?>[] types = (annotation != null) ? annotation.value() : new Class<?>[0];
        if (types.length == 0) {
            types = Arrays.stream(method.getParameterTypes())
                    .filter(Throwable.class::isAssignableFrom)
                    .toArray(Class<?>[]::new);
        }
        return Arrays.stream(types).anyMatch(ThrottledException.class::isAssignableFrom);
    }
}
