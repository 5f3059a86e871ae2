package dev.throttle.testing;

import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.Policy;

/**
 * A limiter that passes every call to another: tests override the calls whose behaviour they change
 * (a store that fails some calls, one that asks for its acquires to be confirmed). The default
 * methods of {@link Limiter} call these.
 */
public class ForwardingLimiter implements Limiter {

    private final Limiter limiter;

    /**
     * @param limiter the limiter every call goes to
     */
    public ForwardingLimiter(Limiter limiter) {
        this.limiter = limiter;
    }

    @Override
    public Policy policy() {
        return this.limiter.policy();
    }

    @Override
    public Decision tryAcquire(String key, int cost) {
        return this.limiter.tryAcquire(key, cost);
    }

    @Override
    public void refund(String key, int cost) {
        this.limiter.refund(key, cost);
    }

    @Override
    public Decision peek(String key) {
        return this.limiter.peek(key);
    }

    @Override
    public void reset(String key) {
        this.limiter.reset(key);
    }
}
