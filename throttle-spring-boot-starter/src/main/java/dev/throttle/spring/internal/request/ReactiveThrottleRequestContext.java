package dev.throttle.spring.internal.request;

import reactor.core.publisher.Mono;
import reactor.util.context.ContextView;

/**
 * The reactive counterpart of {@link ThrottleRequestContext}: finds the request a reactive call
 * belongs to in the subscriber's context (WebFlux puts the exchange there), without blocking.
 */
@FunctionalInterface
public interface ReactiveThrottleRequestContext {

    /**
     * Returns the request context of the call subscribed with {@code context}.
     * @param context the subscriber's context
     * @return the request context; {@link ThrottleRequestContext#NONE} outside a request
     */
    Mono<ThrottleRequestContext> current(ContextView context);
}
