package dev.throttle;

import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * A concurrency slot held by one call ({@link Throttler#enter}): closing it releases that slot, by
 * its receipt, once; a second close does nothing, and a close after the slot's lease ran out frees
 * no other call's slot. Thread-safe: a slot may be taken on one thread and closed on another.
 */
public final class Slot implements AutoCloseable {

    private final BoundPolicy policy;

    private final @Nullable String key;

    private final Decision decision;

    private final AtomicBoolean released = new AtomicBoolean();

    Slot(BoundPolicy policy, @Nullable String key, Decision decision) {
        this.policy = policy;
        this.key = key;
        this.decision = decision;
    }

    /**
     * Returns the decision that took the slot: the slots left, and the slot's receipt.
     * @return the allowed decision
     */
    public Decision decision() {
        return this.decision;
    }

    /**
     * Releases the slot, the first time only. On a store that decides calls in the order they were
     * made (Redis) the release is sent and not waited for: this instance's later calls are decided
     * after it, so the next {@link Throttler#enter} finds the slot free. A store that cannot be
     * reached leaves the slot to free itself when its lease runs out (or the failure policy gives it
     * back when the store answers again).
     */
    @Override
    public void close() {
        if (this.released.compareAndSet(false, true)) {
            this.policy.releaseSlot(this.key, this.decision);
        }
    }
}
