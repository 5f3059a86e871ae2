package dev.throttle.spring.internal.aop;

import dev.throttle.ThrottledException;
import dev.throttle.spring.admission.Admission;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import java.lang.reflect.Method;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * Decides a handler's {@code @Throttled} before its arguments are bound, when every key reads
 * nothing but the request ({@code #ip}, {@code #principal}, or no key): a refused request then runs
 * no {@code @ModelAttribute} method, no binding and no validation, and a request that fails binding
 * (a 400, a 500 from a missing entity) is still counted. The decision is kept in a request attribute
 * that the handler's advice claims, so that the call is charged once and still settled by its
 * outcome (reset-on-success, count: failures). A handler whose keys read its arguments, or whose
 * plan or cost is chosen by an expression, is decided by its advice, as before.
 *
 * <p>Spring MVC decides its handlers here whatever they return ({@link #decide}): the advice of
 * one that returns a deferred reactive type claims the decision when called, on the request's
 * thread. WebFlux decides the handlers that return a publisher Reactor carries its context through
 * ({@link #decideAsync}), whose advice finds the exchange, and so the decision, in that context.
 */
public final class EarlyDecisions {

    /** The request attribute that carries an early decision to the handler's advice. */
    public static final String ATTRIBUTE = EarlyDecisions.class.getName() + ".decided";

    private final ThrottledMethods methods;

    /**
     * Creates the early decisions.
     * @param methods the annotated methods
     */
    EarlyDecisions(ThrottledMethods methods) {
        this.methods = methods;
    }

    /**
     * Decides a handler now if its keys read only the request.
     * @param method the handler method
     * @param beanType the handler's class (the user class, not a proxy's)
     * @param request the request
     * @return what to keep under {@link #ATTRIBUTE} for the handler's advice, or null when the handler
     * is decided later (or not throttled)
     * @throws ThrottledException when a policy refuses (what the earlier ones took is given back)
     */
    @Nullable
    Object decide(Method method, Class<?> beanType, ThrottleRequestContext request) {
        ThrottledMethod throttled = this.methods.resolve(method, beanType);
        if (!decidesEarly(throttled) || request.safelisted()) {
            return null;
        }
        String[] keys = keys(throttled, request);
        return new Decided(throttled.method(), Admitted.of(request.admit(throttled.throttles(), keys), request));
    }

    /**
     * Decides a WebFlux handler now, without blocking, if its keys read only the request and it
     * returns a publisher that carries the subscriber's context (where its advice claims the decision).
     * @param method the handler method
     * @param beanType the handler's class (the user class, not a proxy's)
     * @param request the exchange's request context
     * @return completes with what to keep under {@link #ATTRIBUTE}, or null when the handler is
     * decided later (or not throttled); fails with a {@link ThrottledException} when a policy refuses
     */
    CompletionStage<@Nullable Object> decideAsync(Method method, Class<?> beanType, ThrottleRequestContext request) {
        ThrottledMethod throttled = this.methods.resolve(method, beanType);
        if (!decidesReactiveEarly(throttled) || request.safelisted()) {
            return CompletableFuture.completedStage(null);
        }
        String[] keys = keys(throttled, request);
        CompletableFuture<Admission> admitting =
                request.admitAsync(throttled.throttles(), keys).toCompletableFuture();
        CompletableFuture<@Nullable Object> decided =
                admitting.thenApply((admission) -> new Decided(throttled.method(), Admitted.of(admission, request)));
        // the exchange's cancel (a client gone) reaches the admission: a call waiting for a slot leaves
        decided.whenComplete((done, error) -> {
            if (decided.isCancelled() && !admitting.cancel(false)) {
                // admitted just before: what it took is lost with the stage that would have handed it on
                admitting.thenAccept(Admission::refundAsync);
            }
        });
        return decided;
    }

    /**
     * Whether {@link #decideAsync} decides a WebFlux handler: it is throttled, its keys read only
     * the request, no plan or cost expression chooses per call, and it returns a publisher that
     * carries the subscriber's context.
     * @param method the handler method
     * @param beanType the handler's class
     * @return whether the handler is decided before its arguments are resolved
     */
    boolean decidesReactiveEarly(Method method, Class<?> beanType) {
        return decidesReactiveEarly(this.methods.resolve(method, beanType));
    }

    private static boolean decidesReactiveEarly(ThrottledMethod throttled) {
        return throttled.reactive() && throttled.plan().carriesContext() && decidesEarly(throttled);
    }

    /**
     * Throttled, keys that read only the request, and no expression (which may read the arguments)
     * choosing per call. Never a call that holds a concurrency slot: its slot is taken when the call
     * starts, by its advice, so that a request that fails binding holds no slot it never releases.
     */
    private static boolean decidesEarly(ThrottledMethod throttled) {
        return !throttled.throttles().isEmpty()
                && throttled.keys().requestOnly()
                && !throttled.hasChoices()
                && !throttled.releasesAtEnd();
    }

    private static String[] keys(ThrottledMethod throttled, ThrottleRequestContext request) {
        return throttled.keys().evaluate(new Object[throttled.method().getParameterCount()], request);
    }

    /**
     * Claims the early decision of a call, if it has one: then the call is not charged again.
     * @param throttled the called method
     * @param request the request
     * @return what the early decision took, or null
     */
    static @Nullable Admitted claim(ThrottledMethod throttled, ThrottleRequestContext request) {
        if (request.getAttribute(ATTRIBUTE) instanceof Decided decided
                && decided.method().equals(throttled.method())) {
            // claimed once: a second call of the handler in the same request (a forward) is charged anew
            request.removeAttribute(ATTRIBUTE);
            return decided.taken();
        }
        return null;
    }

    /**
     * The request context an early decision was made with, so that the decided handler's advice,
     * which claims the decision, finds the request without building its context again.
     * @param decided what is kept under {@link #ATTRIBUTE}, or null
     * @return the context, or null when {@code decided} is no early decision
     */
    public static @Nullable ThrottleRequestContext requestOf(@Nullable Object decided) {
        return (decided instanceof Decided early) ? early.taken().request() : null;
    }

    private record Decided(Method method, Admitted taken) {}
}
