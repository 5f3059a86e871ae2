package dev.throttle.spring.internal.aop;

import java.lang.reflect.Method;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Future;
import org.jspecify.annotations.Nullable;
import org.springframework.core.KotlinDetector;
import org.springframework.core.MethodParameter;
import org.springframework.core.ReactiveAdapter;
import org.springframework.core.ReactiveAdapterRegistry;
import org.springframework.core.ResolvableType;
import org.springframework.util.ClassUtils;

/**
 * What a throttled method's return type says about its outcome, decided once per method: a value
 * (the outcome is the return, or a {@code ResponseEntity}'s status), a {@link CompletionStage},
 * a type Spring's {@link ReactiveAdapterRegistry} knows (Reactor's, RxJava's, Mutiny's, Kotlin's
 * {@code Flow}, any {@code Publisher}: throttled when subscribed when it is deferred, and settled
 * by its outcome), a {@code ResponseEntity} whose body may be one of those, or a type whose
 * outcome arrives by a path the advisor cannot follow ({@code Callable}, {@code DeferredResult},
 * a plain {@code Future}, an emitter). Names optional classes (Reactor, Spring Web) only by
 * string, so that it loads without them.
 */
final class ReturnTypes {

    private static final ClassLoader classLoader = ReturnTypes.class.getClassLoader();

    /** Following a publisher to its outcome needs Reactor's operators. */
    private static final boolean REACTOR_PRESENT = ClassUtils.isPresent("reactor.core.publisher.Flux", classLoader);

    private static final Class<?> MONO = resolve("reactor.core.publisher.Mono");

    private static final Class<?> FLUX = resolve("reactor.core.publisher.Flux");

    private static final Class<?> RESPONSE_ENTITY = resolve("org.springframework.http.ResponseEntity");

    private static final boolean WEB_PRESENT = RESPONSE_ENTITY != null;

    private static final Class<?> MODEL_AND_VIEW = resolve("org.springframework.web.servlet.ModelAndView");

    private static final Class<?> RENDERING = resolve("org.springframework.web.reactive.result.view.Rendering");

    /** A functional endpoint's answer, WebFlux's and Spring MVC's. */
    private static final Class<?> REACTIVE_SERVER_RESPONSE =
            resolve("org.springframework.web.reactive.function.server.ServerResponse");

    private static final Class<?> SERVLET_SERVER_RESPONSE =
            resolve("org.springframework.web.servlet.function.ServerResponse");

    /**
     * With kotlinx-coroutines-reactor, Spring AOP runs a Kotlin {@code suspend fun} as a Mono (a
     * Flux when it returns a {@code Flow}) that its proxy awaits, and carries the coroutine's
     * Reactor context (WebFlux's exchange) into it and into a {@code Flow} collected through Reactor.
     */
    private static final boolean COROUTINES_REACTOR_PRESENT =
            REACTOR_PRESENT && ClassUtils.isPresent("kotlinx.coroutines.reactor.MonoKt", classLoader);

    private static final Class<?> FLOW = resolve("kotlinx.coroutines.flow.Flow");

    /** Types whose outcome Spring MVC learns by a path the advisor cannot follow. */
    private static final String[] HIDING = {
        "org.springframework.web.context.request.async.DeferredResult",
        "org.springframework.web.context.request.async.WebAsyncTask",
        "org.springframework.web.servlet.mvc.method.annotation.ResponseBodyEmitter",
        "org.springframework.web.servlet.mvc.method.annotation.StreamingResponseBody"
    };

    private ReturnTypes() {}

    /** How a call's outcome is found. */
    enum Kind {

        /** The returned value (or a ResponseEntity's status) is the outcome. */
        VALUE,

        /** A CompletionStage: settled when it completes. */
        STAGE,

        /** A deferred reactive type: throttled when subscribed, settled by its outcome. */
        SUBSCRIBED,

        /**
         * Decided per call from the value: a ResponseEntity whose body may be reactive, a reactive
         * type that is not deferred, or a method declared to return Object.
         */
        FOLLOWED,

        /** The outcome cannot be seen: refused at startup where the outcome matters. */
        HIDDEN
    }

    /**
     * How the calls of one method are followed to their outcome.
     *
     * @param kind how the outcome is found
     * @param adapter converts the declared type to and from a publisher; null for {@link Kind#SUBSCRIBED}
     * types that Reactor's own Mono or Flux can stand for, and for the other kinds
     * @param many whether a subscribed call emits many values, so that its outcome is its completion
     * @param description the return type as written in messages
     */
    record Plan(Kind kind, ReactiveAdapter adapter, boolean many, String description) {

        /**
         * Whether a reactive caller's context (WebFlux's exchange) reaches the throttle: true for
         * Reactor's own types, false through another library's.
         * @return whether the subscriber's context is seen
         */
        boolean carriesContext() {
            return this.adapter == null || (COROUTINES_REACTOR_PRESENT && this.adapter.getReactiveType() == FLOW);
        }
    }

    /**
     * Decides how calls of a method are followed to their outcome.
     * @param method the method
     * @return the plan
     */
    static Plan plan(Method method) {
        if (KotlinDetector.isSuspendingFunction(method)) {
            return suspending(method);
        }
        Class<?> type = method.getReturnType();
        String description =
                ResolvableType.forMethodReturnType(method).toString().replaceAll("[\\w$]+\\.", "");
        if (CompletionStage.class.isAssignableFrom(type)) {
            return new Plan(Kind.STAGE, null, false, description);
        }
        ReactiveAdapter adapter = adapterFor(type);
        if (adapter != null) {
            if (!adapter.getDescriptor().isDeferred()) {
                return new Plan(Kind.FOLLOWED, null, false, description);
            }
            boolean many = adapter.isMultiValue();
            // Reactor's own Mono or Flux is returned as it is when the declared type allows it
            Class<?> own = many ? FLUX : MONO;
            return new Plan(Kind.SUBSCRIBED, type.isAssignableFrom(own) ? null : adapter, many, description);
        }
        if (hides(type)) {
            return new Plan(Kind.HIDDEN, null, false, description);
        }
        if (RESPONSE_ENTITY != null && RESPONSE_ENTITY.isAssignableFrom(type)) {
            Class<?> body = ResolvableType.forMethodReturnType(method)
                    .as(RESPONSE_ENTITY)
                    .getGeneric(0)
                    .resolve();
            if (body != null && hides(body)) {
                return new Plan(Kind.HIDDEN, null, false, description);
            }
            boolean plain = body != null
                    && body != Object.class
                    && !CompletionStage.class.isAssignableFrom(body)
                    && adapterFor(body) == null;
            return new Plan(plain ? Kind.VALUE : Kind.FOLLOWED, null, false, description);
        }
        return new Plan((type == Object.class) ? Kind.FOLLOWED : Kind.VALUE, null, false, description);
    }

    /**
     * A Kotlin {@code suspend fun}: Spring AOP hands its advice a Mono of the function's result (a
     * Flux of a returned {@code Flow}'s values) and its proxy awaits that publisher, so the call
     * is throttled at subscription like a method returning Mono. Without kotlinx-coroutines-reactor
     * the advice sees only the suspended call's marker, and the outcome is hidden.
     */
    private static Plan suspending(Method method) {
        Class<?> result = MethodParameter.forExecutable(method, -1).getParameterType();
        String description = "suspend fun (" + result.getSimpleName() + ")";
        if (!COROUTINES_REACTOR_PRESENT) {
            return new Plan(Kind.HIDDEN, null, false, description + " without kotlinx-coroutines-reactor");
        }
        return new Plan(Kind.SUBSCRIBED, null, FLOW != null && FLOW.isAssignableFrom(result), description);
    }

    /**
     * Returns the adapter that follows a value of {@code type} to its outcome.
     * @param type a type
     * @return the adapter, or null when the registry does not know the type or Reactor is absent
     * (a type the registry knows is then one whose outcome is hidden)
     */
    static ReactiveAdapter adapterFor(Class<?> type) {
        if (!REACTOR_PRESENT || type == Object.class || type.isPrimitive()) {
            return null;
        }
        ReactiveAdapter adapter = ReactiveAdapterRegistry.getSharedInstance().getAdapter(type);
        return (adapter != null && !CompletionStage.class.isAssignableFrom(adapter.getReactiveType())) ? adapter : null;
    }

    /**
     * Whether the outcome of a value of {@code type} arrives later by a path the advisor cannot
     * follow: a Callable or a DeferredResult that Spring MVC completes, a plain Future, an
     * emitter; or a reactive type, without Reactor to follow it.
     * @param type a type
     * @return whether the outcome is hidden
     */
    static boolean hides(Class<?> type) {
        if (Callable.class.isAssignableFrom(type)
                || (Future.class.isAssignableFrom(type) && !CompletionStage.class.isAssignableFrom(type))) {
            return true;
        }
        for (String name : HIDING) {
            if (isA(type, name)) {
                return true;
            }
        }
        return !REACTOR_PRESENT && ReactiveAdapterRegistry.getSharedInstance().getAdapter(type) != null;
    }

    /**
     * Whether a value of {@code type}, whose outcome is hidden, is one that a Spring MVC handler
     * returns to process the request asynchronously (a Callable, a DeferredResult, a WebAsyncTask,
     * an emitter, a StreamingResponseBody): then the end of the request's asynchronous processing
     * is the end of the call.
     * @param type a type whose outcome is hidden
     * @return whether the request's end can stand for the call's
     */
    static boolean endsWithRequest(Class<?> type) {
        if (Callable.class.isAssignableFrom(type)) {
            return true;
        }
        for (String name : HIDING) {
            if (isA(type, name)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Whether a returned value is a ResponseEntity.
     * @param value what the call returned
     * @return whether its status and body are to be looked at
     */
    static boolean isEntity(Object value) {
        return RESPONSE_ENTITY != null && RESPONSE_ENTITY.isInstance(value);
    }

    /**
     * Whether a returned value is a failed outcome although no exception was thrown: a value that
     * Spring answers with its own error status ({@code ResponseEntity}, {@code ProblemDetail},
     * {@code ErrorResponse}, a {@code ModelAndView}, a WebFlux {@code Rendering} or a functional
     * endpoint's {@code ServerResponse}). A login that
     * answers a wrong password with such a value must not reset its lockout nor get back what it took.
     * @param value what the call returned (or a reactive call emitted)
     * @return whether it counts as a failure
     */
    static boolean isFailure(@Nullable Object value) {
        if (value == null || !WEB_PRESENT) {
            return false;
        }
        if (isEntity(value)) {
            return ((org.springframework.http.ResponseEntity<?>) value)
                    .getStatusCode()
                    .isError();
        }
        return Answers.isError(value);
    }

    private static boolean isA(Class<?> type, String className) {
        if (type == null) {
            return false;
        }
        if (type.getName().equals(className)) {
            return true;
        }
        for (Class<?> contract : type.getInterfaces()) {
            if (isA(contract, className)) {
                return true;
            }
        }
        return isA(type.getSuperclass(), className);
    }

    /** The values with a status of their own besides a ResponseEntity; kept apart so that ReturnTypes loads without Spring Web. */
    private static final class Answers {

        static boolean isError(Object value) {
            if (value instanceof org.springframework.http.ProblemDetail problem) {
                // a problem without a status is answered 500
                return problem.getStatus() < 200 || problem.getStatus() >= 400;
            }
            if (value instanceof org.springframework.web.ErrorResponse error) {
                return error.getStatusCode().isError();
            }
            if (MODEL_AND_VIEW != null && MODEL_AND_VIEW.isInstance(value)) {
                org.springframework.http.HttpStatusCode status =
                        ((org.springframework.web.servlet.ModelAndView) value).getStatus();
                return status != null && status.isError();
            }
            if (REACTIVE_SERVER_RESPONSE != null && REACTIVE_SERVER_RESPONSE.isInstance(value)) {
                return ((org.springframework.web.reactive.function.server.ServerResponse) value)
                        .statusCode()
                        .isError();
            }
            if (SERVLET_SERVER_RESPONSE != null && SERVLET_SERVER_RESPONSE.isInstance(value)) {
                return ((org.springframework.web.servlet.function.ServerResponse) value)
                        .statusCode()
                        .isError();
            }
            if (RENDERING != null && RENDERING.isInstance(value)) {
                org.springframework.http.HttpStatusCode status =
                        ((org.springframework.web.reactive.result.view.Rendering) value).status();
                return status != null && status.isError();
            }
            return false;
        }
    }

    private static Class<?> resolve(String className) {
        return ClassUtils.isPresent(className, classLoader)
                ? ClassUtils.resolveClassName(className, classLoader)
                : null;
    }
}
