package dev.throttle.spring.internal.aop;

import dev.throttle.spring.internal.request.ReactiveThrottleRequestContext;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import java.util.Optional;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.util.function.SingletonSupplier;

/**
 * Applies the {@code @Throttled} annotations of a call through its {@link dev.throttle.spring.admission.Admission}: a plain
 * value, a {@code ResponseEntity} or a {@link java.util.concurrent.CompletionStage} here, blocking
 * if the store does, and settled by {@link Outcomes}; a deferred reactive type (Mono, Flux, any
 * Publisher, RxJava's...) through {@link ReactiveThrottling}, at subscription. Names no Reactor
 * type, so that it loads without Reactor.
 */
final class ThrottleInterceptor implements MethodInterceptor {

    // looked up on first use (the advisor is created before the store exists), then kept: no bean
    // factory lookup on the hot path
    private final SingletonSupplier<ThrottledMethods> methods;

    private final SingletonSupplier<ThrottleRequestContext> requestContext;

    /** Empty in a servlet application, where a reactive handler's request is captured per call instead. */
    private final SingletonSupplier<Optional<ReactiveThrottleRequestContext>> reactiveRequestContext;

    ThrottleInterceptor(
            ObjectProvider<ThrottledMethods> methods,
            ObjectProvider<ThrottleRequestContext> requestContext,
            ObjectProvider<ReactiveThrottleRequestContext> reactiveRequestContext) {
        this.methods = SingletonSupplier.of(methods::getObject);
        this.requestContext =
                SingletonSupplier.of(() -> requestContext.getIfAvailable(() -> ThrottleRequestContext.NONE));
        this.reactiveRequestContext =
                SingletonSupplier.of(() -> Optional.ofNullable(reactiveRequestContext.getIfAvailable()));
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        Object target = invocation.getThis();
        Class<?> targetClass = (target != null) ? AopUtils.getTargetClass(target) : null;
        ThrottledMethod throttled = this.methods.obtain().resolve(invocation.getMethod(), targetClass);
        if (throttled.throttles().isEmpty()) {
            return invocation.proceed();
        }
        if (throttled.reactive()) {
            Optional<ReactiveThrottleRequestContext> reactive = this.reactiveRequestContext.obtain();
            if (reactive.isPresent()) {
                return ReactiveThrottling.throttle(
                        throttled, invocation.getArguments(), reactive.get(), null, null, invocation::proceed);
            }
            // Spring MVC subscribes after the handler returned: bind the servlet request now, and claim
            // a decision taken before the arguments were bound (settled later through the bound request)
            ThrottleRequestContext current = this.requestContext.obtain();
            ThrottleRequestContext servlet = current.snapshot();
            Admitted early = EarlyDecisions.claim(throttled, current);
            return ReactiveThrottling.throttle(
                    throttled,
                    invocation.getArguments(),
                    null,
                    servlet,
                    (early != null) ? early.in(servlet) : null,
                    invocation::proceed);
        }
        ThrottleRequestContext request = this.requestContext.obtain();
        if (request.safelisted()) {
            return invocation.proceed();
        }
        // decided before the handler's arguments were bound (EarlyDecisions): charged once, settled here
        Admitted taken = EarlyDecisions.claim(throttled, request);
        if (taken == null) {
            ThrottledMethod.Call call = throttled.call(invocation.getArguments(), request);
            taken = Admitted.of(request.admit(call.charges(), call.keys()), request);
        }
        taken = throttled.metered(taken, invocation.getArguments());
        if (taken.admission().waitMillis() > 0 && Waiting.delaysStage(throttled)) {
            // a CompletionStage: the call waits for its turn on a timer, no thread held meanwhile
            return Waiting.later(throttled, taken, invocation::proceed);
        }
        // a policy with a wait: the call sleeps on the calling thread until its turn
        taken.admission().awaitTurn();
        if (!throttled.settlesOnSuccess() && !throttled.releasesAtEnd()) {
            return invocation.proceed();
        }
        // a handler may answer by the response's status alone (sendError(401), returning nothing),
        // or by one it declares (@ResponseStatus) or sets on a WebFlux response it was given
        int statusBefore = request.responseStatus();
        ErrorAnswers answers = throttled.errorAnswers();
        int argumentStatusBefore = answers.status(invocation.getArguments());
        Object result;
        try {
            result = invocation.proceed();
        } catch (Throwable ex) {
            if (throttled.releasesAtEnd()) {
                // a concurrency slot is released however the call ends: an exception ends it here
                taken.admission().failed();
            }
            throw ex;
        }
        boolean answeredWithError = answers.declared()
                || answeredWithError(statusBefore, request.responseStatus())
                || answeredWithError(argumentStatusBefore, answers.status(invocation.getArguments()));
        return Outcomes.settle(throttled, taken, result, answeredWithError);
    }

    /** The call turned its response's status into an error (one it already had is no news of the call's). */
    private static boolean answeredWithError(int before, int after) {
        return after >= 400 && before < 400;
    }
}
