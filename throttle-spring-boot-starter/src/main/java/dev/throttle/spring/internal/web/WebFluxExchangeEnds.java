package dev.throttle.spring.internal.web;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.core.Ordered;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * Runs what a throttled call left for the end of its exchange, however the exchange ends: written,
 * failed, or cancelled by a client gone. A {@code ResponseEntity} whose reactive body settles the
 * call may never have that body read (a client gone between the entity and its body, a conditional
 * request answered 304): then nothing else would end the call, and a concurrency slot would stay
 * taken for its lease. Costs an exchange nothing unless a call left something.
 */
public final class WebFluxExchangeEnds implements WebFilter, Ordered {

    private static final Log logger = LogFactory.getLog(WebFluxExchangeEnds.class);

    private static final String ATTRIBUTE = WebFluxExchangeEnds.class.getName() + ".actions";

    /** Just after Spring's filter that puts the exchange in the Reactor context. */
    private static final int ORDER = Ordered.HIGHEST_PRECEDENCE + 1;

    /**
     * Leaves an action for the end of an exchange.
     * @param exchange the exchange
     * @param action what to run when it ends
     */
    static void atEnd(ServerWebExchange exchange, Runnable action) {
        @SuppressWarnings("unchecked")
        Queue<Runnable> actions = (Queue<Runnable>)
                exchange.getAttributes().computeIfAbsent(ATTRIBUTE, (name) -> new ConcurrentLinkedQueue<Runnable>());
        actions.add(action);
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        return chain.filter(exchange).doFinally((signal) -> {
            Queue<Runnable> actions = exchange.getAttribute(ATTRIBUTE);
            if (actions != null) {
                for (Runnable action = actions.poll(); action != null; action = actions.poll()) {
                    try {
                        action.run();
                    } catch (RuntimeException ex) {
                        // one call's ending must not keep the others of the exchange from theirs
                        logger.debug("An action left for the end of an exchange failed", ex);
                    }
                }
            }
        });
    }

    @Override
    public int getOrder() {
        return ORDER;
    }
}
