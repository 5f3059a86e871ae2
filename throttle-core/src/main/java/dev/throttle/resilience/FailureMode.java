package dev.throttle.resilience;

/**
 * What a {@link ResilientThrottleStore} answers while its store cannot, as
 * {@code throttle.store.redis.failure-mode}.
 */
public enum FailureMode {

    /** Allow every call: availability over protection. */
    OPEN,

    /** Refuse every call, with a short Retry-After: protection over availability (a login throttle). */
    CLOSED,

    /**
     * Decide on this instance with a bounded memory store, so each instance still enforces the limit
     * on its own share of the traffic. The default.
     */
    LOCAL
}
