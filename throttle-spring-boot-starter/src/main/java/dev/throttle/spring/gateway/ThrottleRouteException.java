package dev.throttle.spring.gateway;

/**
 * A route whose {@code RequestRateLimiter} filter cannot be throttled as written (no such policy,
 * plan or argument, a cost the policy cannot grant): the route's mistake, which the start reports as
 * one, not as the gateway's stack traces.
 */
final class ThrottleRouteException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    ThrottleRouteException(String message) {
        super(message);
    }

    ThrottleRouteException(String message, Throwable cause) {
        super(message, cause);
    }
}
