package dev.throttle;

import static dev.throttle.PackedTransition.time;

/**
 * A transition over packed (count, stamp) whose state lasts a fixed span after its stamp, and whose
 * receipt is that stamp: a fixed window's start, a lockout's last allowed attempt. A state past its
 * span counts as never used. A later call that keeps the state keeps its stamp (a fixed window's
 * calls) or stamps it anew (a lockout's next attempt), so a receipt names the state its call
 * counted in, and a refund by receipt gives back only while that state is the key's current one.
 */
abstract class StampedTransition implements PackedTransition {

    /** How long a state lasts after its stamp: the fixed window, or the lockout's {@code expireAfter}. */
    final long spanMillis;

    StampedTransition(long spanMillis) {
        this.spanMillis = spanMillis;
    }

    /** The key's state while its span lasts, or {@link #EMPTY}. */
    final long current(long state, long now) {
        return (state == EMPTY || now >= end(time(state, now))) ? EMPTY : state;
    }

    /**
     * When the span of a state stamped at {@code stamp} ends: {@link #spanMillis} later, unless the
     * spans follow a calendar (a fixed window of days, weeks or months).
     * @param stamp the state's stamp
     * @return the end of its span, in milliseconds
     */
    long end(long stamp) {
        return stamp + this.spanMillis;
    }

    @Override
    public long refund(long state, long now, int cost, long receipt) {
        long current = current(state, now);
        if (current == EMPTY || Math.max(1, time(current, now)) != receipt) {
            // the call's window has ended, or a later attempt came, or the state expired or was reset:
            // what the call took went with its state
            return state;
        }
        return refund(current, now, cost);
    }
}
