package dev.throttle.spring.internal.web;

import org.springframework.core.Ordered;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * A servlet filter of the starter, run once per request at the order it was given (among the
 * servlet filters, relative to Spring Security's).
 */
public abstract class OrderedRequestFilter extends OncePerRequestFilter implements Ordered {

    private final int order;

    /**
     * Creates the filter.
     * @param order its order among servlet filters
     */
    protected OrderedRequestFilter(int order) {
        this.order = order;
    }

    @Override
    public int getOrder() {
        return this.order;
    }
}
