package dev.throttle.spring.internal.aop;

import dev.throttle.Throttler;
import dev.throttle.spring.internal.request.ReactiveThrottleRequestContext;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import java.lang.reflect.Method;
import org.aopalliance.aop.Advice;
import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.StaticMethodMatcherPointcut;
import org.springframework.beans.factory.ObjectProvider;

/**
 * The advisor that applies {@code @Throttled}: a pointcut on annotated methods (and on the methods
 * an annotated class covers: a controller's handler methods, another bean's public methods) and the
 * interceptor that throttles them. Collaborators are looked up on
 * first use, so that creating the advisor (which happens early) starts no store. Its order
 * ({@code throttle.aop.order}) places throttling outside or inside other advice on the same
 * method, such as {@code @Transactional} and {@code @Cacheable}: the lower the order, the further
 * outside.
 */
public final class ThrottledAdvisor extends AbstractPointcutAdvisor {

    private static final long serialVersionUID = 1L;

    private final transient Pointcut pointcut = new StaticMethodMatcherPointcut() {

        @Override
        public boolean matches(Method method, Class<?> targetClass) {
            // a final class cannot be subclassed: rather than fail Spring's proxy, the startup check names it
            return ThrottledAnnotations.isThrottled(method, targetClass)
                    && !ThrottledAnnotations.hiddenByFinalClass(method, targetClass);
        }
    };

    private final transient ThrottleInterceptor interceptor;

    /**
     * Creates the advisor.
     * @param methods the annotated methods (which hold their policies, bound to the store)
     * @param requestContext the request context, when running in a servlet web application
     * @param reactiveRequestContext the request context of reactive calls, when running in WebFlux
     */
    public ThrottledAdvisor(
            ObjectProvider<ThrottledMethods> methods,
            ObjectProvider<ThrottleRequestContext> requestContext,
            ObjectProvider<ReactiveThrottleRequestContext> reactiveRequestContext) {
        this.interceptor = new ThrottleInterceptor(methods, requestContext, reactiveRequestContext);
    }

    /**
     * Creates the advisor.
     * @param throttler not used: the annotated methods hold their policies, bound to the store
     * @param methods the annotated methods
     * @param requestContext the request context, when running in a servlet web application
     * @param reactiveRequestContext the request context of reactive calls, when running in WebFlux
     * @deprecated in favour of {@link #ThrottledAdvisor(ObjectProvider, ObjectProvider, ObjectProvider)}
     */
    @Deprecated(since = "0.1.0", forRemoval = true)
    public ThrottledAdvisor(
            ObjectProvider<Throttler> throttler,
            ObjectProvider<ThrottledMethods> methods,
            ObjectProvider<ThrottleRequestContext> requestContext,
            ObjectProvider<ReactiveThrottleRequestContext> reactiveRequestContext) {
        this(methods, requestContext, reactiveRequestContext);
    }

    @Override
    public Pointcut getPointcut() {
        return this.pointcut;
    }

    @Override
    public Advice getAdvice() {
        return this.interceptor;
    }
}
