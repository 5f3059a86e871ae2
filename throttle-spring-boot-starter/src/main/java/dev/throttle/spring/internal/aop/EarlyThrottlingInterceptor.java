package dev.throttle.spring.internal.aop;

import dev.throttle.spring.internal.request.ThrottleRequestContext;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.HandlerInterceptor;

/**
 * Decides a Spring MVC handler's {@code @Throttled} in {@code preHandle}, before its arguments are
 * bound and validated and before any {@code @ModelAttribute} method runs, when its keys read
 * nothing but the request ({@link EarlyDecisions}). A refusal is thrown from here, so that the
 * application's exception handling answers it as it answers one from the handler. Only the
 * request's first dispatch is decided: an asynchronous request's second dispatch, an error
 * dispatch and a forward are not charged here again.
 */
public final class EarlyThrottlingInterceptor implements HandlerInterceptor {

    private final EarlyDecisions decisions;

    private final ThrottleRequestContext requestContext;

    /**
     * Creates the interceptor.
     * @param methods the annotated methods
     * @param requestContext the servlet request context ({@code #ip}, {@code #principal}, headers)
     */
    public EarlyThrottlingInterceptor(ThrottledMethods methods, ThrottleRequestContext requestContext) {
        this.decisions = new EarlyDecisions(methods);
        this.requestContext = requestContext;
    }

    @Override
    public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler) {
        if (request.getDispatcherType() != DispatcherType.REQUEST || !(handler instanceof HandlerMethod method)) {
            return true;
        }
        Object decided = this.decisions.decide(method.getMethod(), method.getBeanType(), this.requestContext);
        if (decided != null) {
            request.setAttribute(EarlyDecisions.ATTRIBUTE, decided);
        }
        return true;
    }
}
