package dev.throttle.spring.redis;

import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.tracing.TraceContext;
import io.lettuce.core.tracing.TraceContextProvider;
import io.lettuce.core.tracing.Tracing;
import org.jspecify.annotations.Nullable;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import reactor.core.publisher.Mono;

/**
 * Makes the caller's trace the parent of the store's Redis commands, when Lettuce traces them (its
 * {@code ClientResources} have a {@link Tracing}: Spring Boot gives it Micrometer's whenever there is
 * an {@code ObservationRegistry}). Through Lettuce's reactive API, which the store uses, Lettuce looks
 * for the parent only in the Reactor context of the subscriber, never on the caller's thread, and the
 * store subscribes with an empty one: so each command would start a trace of its own, apart from the
 * {@code throttle.decision} observation (or the request) it belongs to. The parent is read here on
 * the caller's thread, as Lettuce's own tracing reads it (Micrometer's current observation, or
 * Brave's current span), when the call is made, and handed to Lettuce in the call's context.
 *
 * <p>Costs nothing while Lettuce does not trace, and only a context entry per call while the
 * caller has a current trace. Thread-safe.
 */
final class CallerTrace {

    /** Without Lettuce's tracing: calls go as they are. */
    static final CallerTrace NONE = new CallerTrace(null);

    /** Lettuce's reader of the current trace on the calling thread; null while Lettuce does not trace. */
    private final @Nullable TraceContextProvider current;

    private CallerTrace(@Nullable TraceContextProvider current) {
        this.current = current;
    }

    /**
     * The trace of the commands made through {@code connectionFactory}: Lettuce's tracing when its
     * factory has client resources that trace, else {@link #NONE}.
     */
    static CallerTrace of(ReactiveRedisConnectionFactory connectionFactory) {
        if (connectionFactory instanceof LettuceConnectionFactory lettuce) {
            ClientResources resources = lettuce.getClientResources();
            Tracing tracing = (resources != null) ? resources.tracing() : null;
            if (tracing != null && tracing.isEnabled()) {
                TraceContextProvider current = tracing.initialTraceContextProvider();
                if (current != null) {
                    return new CallerTrace(current);
                }
            }
        }
        return NONE;
    }

    /**
     * The call with the calling thread's current trace as its commands' parent; the call itself when
     * Lettuce does not trace or nothing is traced now. Called on the caller's thread, as the call is
     * made (the decision's scope is open only there).
     */
    <T> Mono<T> around(Mono<T> call) {
        TraceContextProvider current = this.current;
        if (current == null) {
            return call;
        }
        TraceContext parent = current.getTraceContext();
        return (parent != null && parent != TraceContext.EMPTY)
                ? call.contextWrite(Tracing.withTraceContextProvider(new Parent(parent)))
                : call;
    }

    /** The trace context read when the call was made, whichever thread Lettuce asks on. */
    private record Parent(TraceContext context) implements TraceContextProvider {

        @Override
        public TraceContext getTraceContext() {
            return this.context;
        }
    }
}
