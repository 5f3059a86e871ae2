package dev.throttle.spring.internal.aop;

import java.lang.reflect.Method;
import org.jspecify.annotations.Nullable;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.util.ClassUtils;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.server.ServerWebExchange;

/**
 * The ways a handler answers an error without throwing and without returning an error entity that
 * its declaration shows, so that a call answered so is settled as a failure (a wrong password must
 * neither reset a lockout nor get back what it took):
 *
 * <ul>
 *   <li>a {@code @ResponseStatus} with an error status on the method or its class: Spring sets it
 *       only after the method returned, so every value the method returns is answered with it;
 *   <li>a WebFlux handler given its {@code ServerWebExchange} or {@code ServerHttpResponse} that sets
 *       an error status on it and returns a plain value: the throttle sees no request of a WebFlux
 *       call that returns a plain value, so the status is read from the argument itself.
 * </ul>
 *
 * A servlet handler's response is the request's, read where the call is throttled.
 */
final class ErrorAnswers {

    static final ErrorAnswers NONE = new ErrorAnswers(false, -1);

    private static final boolean WEB_PRESENT =
            ClassUtils.isPresent("org.springframework.web.bind.annotation.ResponseStatus", null);

    private static final boolean REACTIVE_WEB_PRESENT =
            WEB_PRESENT && ClassUtils.isPresent("org.springframework.web.server.ServerWebExchange", null);

    private final boolean declared;

    /** The index of the parameter that carries the response, or -1. */
    private final int responseParameter;

    private ErrorAnswers(boolean declared, int responseParameter) {
        this.declared = declared;
        this.responseParameter = responseParameter;
    }

    /**
     * Reads a method's declaration.
     * @param method the method
     * @return how its calls may answer an error
     */
    static ErrorAnswers of(Method method) {
        if (!WEB_PRESENT) {
            return NONE;
        }
        boolean declared = Web.declaresError(method);
        int parameter = REACTIVE_WEB_PRESENT ? Web.responseParameter(method) : -1;
        return (declared || parameter >= 0) ? new ErrorAnswers(declared, parameter) : NONE;
    }

    /**
     * Whether the method declares an error status for everything it returns.
     * @return whether a normal return is answered with an error
     */
    boolean declared() {
        return this.declared;
    }

    /**
     * The status a call's response argument has now.
     * @param arguments the call's arguments
     * @return the status, or 0 when the method takes no response or none is set yet
     */
    int status(Object[] arguments) {
        if (this.responseParameter < 0 || this.responseParameter >= arguments.length) {
            return 0;
        }
        return Web.status(arguments[this.responseParameter]);
    }

    /** Kept apart so that ErrorAnswers loads without Spring Web. */
    private static final class Web {

        static boolean declaresError(Method method) {
            ResponseStatus status = AnnotatedElementUtils.findMergedAnnotation(method, ResponseStatus.class);
            if (status == null) {
                status = AnnotatedElementUtils.findMergedAnnotation(method.getDeclaringClass(), ResponseStatus.class);
            }
            return status != null && status.code().isError();
        }

        static int responseParameter(Method method) {
            Class<?>[] types = method.getParameterTypes();
            for (int i = 0; i < types.length; i++) {
                if (ServerWebExchange.class.isAssignableFrom(types[i])
                        || ServerHttpResponse.class.isAssignableFrom(types[i])) {
                    return i;
                }
            }
            return -1;
        }

        static int status(@Nullable Object argument) {
            ServerHttpResponse response = (argument instanceof ServerWebExchange exchange)
                    ? exchange.getResponse()
                    : (argument instanceof ServerHttpResponse own) ? own : null;
            HttpStatusCode status = (response != null) ? response.getStatusCode() : null;
            return (status != null) ? status.value() : 0;
        }
    }
}
