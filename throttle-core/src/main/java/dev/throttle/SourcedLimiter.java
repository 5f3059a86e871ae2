package dev.throttle;

import java.util.concurrent.CompletionStage;

/**
 * A {@link Limiter} whose calls are not always decided by one store: a failure policy's limiter
 * ({@link dev.throttle.resilience.ResilientThrottleStore}), which answers through a local store or a
 * failure mode while its store cannot. It says who made each decision, so that listeners and
 * metrics can tell.
 *
 * <p>A plain limiter, whose decisions are always its store's own, does not implement this: a
 * {@link Throttler} attributes its decisions to its store's {@link ThrottleStore#kind()} at no cost
 * per call. Implementations must keep {@code tryAcquire(key, cost)} equal to
 * {@code tryAcquireSourced(key, cost).decision()}.
 */
public interface SourcedLimiter extends Limiter {

    /**
     * Like {@link #tryAcquire}, saying who decided.
     * @param key the key
     * @param cost units to take, between 1 and {@link Policy#maxCost()}
     * @return the decision and its source
     */
    SourcedDecision tryAcquireSourced(String key, int cost);

    /**
     * Like {@link #tryAcquireAsync}, saying who decided.
     * @param key the key
     * @param cost units to take
     * @return the decision and its source, when made
     */
    CompletionStage<SourcedDecision> tryAcquireSourcedAsync(String key, int cost);
}
