package dev.throttle.spring.internal.web;

import dev.throttle.ThrottledException;
import org.jspecify.annotations.Nullable;
import org.springframework.core.Ordered;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebExceptionHandler;
import reactor.core.publisher.Mono;

/**
 * Answers a refusal that did not come from a handler, where no {@code @ControllerAdvice} sees it: a
 * {@code @Throttled} method that a web filter calls (Spring Security's reactive
 * {@code AuthenticationWebFilter} calling a throttled {@code ReactiveAuthenticationManager}), or a
 * {@code Throttler.check} in a filter of the application's own. Without it Spring Boot's error
 * handler answered those with 500, no {@code Retry-After}, and an ERROR in the log per refusal.
 * Ordered just before Spring Boot's error handler; anything but a refusal goes on to it.
 */
public final class WebFluxRefusalExceptionHandler implements WebExceptionHandler, Ordered {

    /** Spring Boot's {@code ErrorWebExceptionHandler} is ordered -1. */
    private static final int ORDER = -2;

    private final WebFluxRefusals refusals;

    /**
     * Creates the handler.
     * @param refusals writes the refusal, as for a handler's
     */
    public WebFluxRefusalExceptionHandler(WebFluxRefusals refusals) {
        this.refusals = refusals;
    }

    @Override
    public Mono<Void> handle(ServerWebExchange exchange, Throwable ex) {
        ThrottledException refusal = refusalIn(ex);
        if (refusal == null || exchange.getResponse().isCommitted()) {
            return Mono.error(ex);
        }
        return this.refusals.write(exchange, refusal);
    }

    /** The refusal, thrown as it is or wrapped (a CompletionException from a stage, a reactive wrapper). */
    private static @Nullable ThrottledException refusalIn(Throwable ex) {
        Throwable current = ex;
        for (int depth = 0; current != null && depth < 8; depth++) {
            if (current instanceof ThrottledException refusal) {
                return refusal;
            }
            current = current.getCause();
        }
        return null;
    }

    @Override
    public int getOrder() {
        return ORDER;
    }
}
