package dev.throttle;

import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * A call charged an estimate of its cost ({@link Throttler#estimate}), to be settled once with what
 * it actually cost: the difference is charged (into debt, bounded) or given back. Settling twice is
 * an error that changes nothing. Thread-safe: an estimate may be taken on one thread and settled on
 * another.
 */
public final class Estimate {

    private final BoundPolicy policy;

    private final @Nullable String key;

    private final int estimate;

    private final int maxDebt;

    private final Decision decision;

    private final AtomicBoolean settled = new AtomicBoolean();

    Estimate(BoundPolicy policy, @Nullable String key, int estimate, int maxDebt, Decision decision) {
        this.policy = policy;
        this.key = key;
        this.estimate = estimate;
        this.maxDebt = maxDebt;
        this.decision = decision;
    }

    /**
     * Returns the decision that allowed the call, charged its estimate.
     * @return the allowed decision
     */
    public Decision decision() {
        return this.decision;
    }

    /**
     * Returns the units charged before the call.
     * @return the estimate
     */
    public int estimate() {
        return this.estimate;
    }

    /**
     * Settles the call with what it cost (see {@link BoundPolicy#settle}), the first time only.
     * @param actualCost what the call cost, not negative
     * @return the units the key owes after a charge, 0 when nothing was charged, -1 when a failure
     * policy kept the charge for a store it could not reach
     * @throws IllegalStateException when the estimate was settled already (nothing changes)
     * @throws IllegalArgumentException for a negative actual cost (nothing changes, and the estimate
     * may still be settled)
     */
    public int settle(long actualCost) {
        if (actualCost < 0) {
            throw new IllegalArgumentException("the actual cost must not be negative, was " + actualCost);
        }
        if (!this.settled.compareAndSet(false, true)) {
            throw new IllegalStateException("this estimate of policy '"
                    + this.policy.policy().name() + "' was settled already; a call is settled once");
        }
        return this.policy.settle(this.key, this.estimate, this.decision, actualCost, this.maxDebt);
    }

    /**
     * Whether the estimate was settled.
     * @return whether {@link #settle} was called
     */
    public boolean isSettled() {
        return this.settled.get();
    }
}
