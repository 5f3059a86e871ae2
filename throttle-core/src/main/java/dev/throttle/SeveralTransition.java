package dev.throttle;

import static dev.throttle.PackedTransition.REJECTED;

/**
 * The transition of a policy with several limits ({@link MultiLimitPolicy}): each
 * limit's own {@link PackedTransition} over its own {@code long}, the key's state holding one per
 * limit in the limits' order. A call is allowed only when every limit allows it, and then every
 * limit's state moves in the one atomic write of the array: no partial charge is ever
 * observable, and a refusal by one limit leaves every other as it was. A state shorter than the
 * limits (written under fewer limits, a plan with fewer) reads as no state for the limits it lacks.
 * Allocates nothing on a refusal but its decision and its parts.
 */
final class SeveralTransition implements ArrayTransition {

    private final PackedTransition[] limits;

    SeveralTransition(PackedTransition[] limits) {
        this.limits = limits.clone();
    }

    private static long part(long[] state, int i) {
        return (i < state.length) ? state[i] : PackedTransition.EMPTY;
    }

    @Override
    public long[] acquire(long[] state, long now, int cost) {
        for (int i = 0; i < this.limits.length; i++) {
            if (this.limits[i].acquire(part(state, i), now, cost) == REJECTED) {
                return null;
            }
        }
        long[] next = new long[this.limits.length];
        for (int i = 0; i < next.length; i++) {
            next[i] = this.limits[i].acquire(part(state, i), now, cost);
        }
        return next;
    }

    @Override
    public Decision allowed(long[] next, long now) {
        Decision[] parts = new Decision[this.limits.length];
        for (int i = 0; i < parts.length; i++) {
            parts[i] = this.limits[i].allowed(next[i], now);
        }
        return Decision.ofLimits(parts);
    }

    /** The limits that refuse say why; the others say what they hold, uncharged (as a peek). */
    @Override
    public Decision rejected(long[] state, long now, int cost) {
        Decision[] parts = new Decision[this.limits.length];
        for (int i = 0; i < parts.length; i++) {
            long own = part(state, i);
            parts[i] = (this.limits[i].acquire(own, now, cost) == REJECTED)
                    ? this.limits[i].rejected(own, now, cost)
                    : this.limits[i].peek(own, now);
        }
        return Decision.ofLimits(parts);
    }

    @Override
    public Decision peek(long[] state, long now) {
        Decision[] parts = new Decision[this.limits.length];
        for (int i = 0; i < parts.length; i++) {
            parts[i] = this.limits[i].peek(part(state, i), now);
        }
        return Decision.ofLimits(parts);
    }

    /** Every limit takes the units, each into its own debt: a charge is never refused. */
    @Override
    public long[] charge(long[] state, long now, int units, int maxDebt) {
        long[] next = new long[this.limits.length];
        boolean changed = false;
        for (int i = 0; i < next.length; i++) {
            long own = part(state, i);
            next[i] = this.limits[i].charge(own, now, units, maxDebt);
            changed |= next[i] != own;
        }
        return changed ? next : state;
    }

    /** The largest debt of a limit. */
    @Override
    public int debt(long[] state, long now) {
        int debt = 0;
        for (int i = 0; i < this.limits.length; i++) {
            debt = Math.max(debt, this.limits[i].debt(part(state, i), now));
        }
        return debt;
    }

    @Override
    public long[] refund(long[] state, long now, int cost) {
        return giveBack(state, now, cost, null);
    }

    /** Without the parts' receipts, each limit gives back as a refund without a receipt does. */
    @Override
    public long[] refund(long[] state, long now, int cost, long receipt) {
        return giveBack(state, now, cost, null);
    }

    /** Each limit gives back exactly what the call took from it, by its own receipt. */
    @Override
    public long[] refund(long[] state, long now, int cost, Decision taken) {
        return giveBack(state, now, cost, (taken.limitCount() == this.limits.length) ? taken : null);
    }

    private long[] giveBack(long[] state, long now, int cost, Decision taken) {
        long[] next = new long[this.limits.length];
        boolean changed = false;
        boolean neutral = true;
        for (int i = 0; i < next.length; i++) {
            long own = part(state, i);
            long receipt = (taken != null) ? taken.limit(i).receipt() : 0;
            next[i] = (own == PackedTransition.EMPTY)
                    ? own
                    : (receipt == 0)
                            ? this.limits[i].refund(own, now, cost)
                            : this.limits[i].refund(own, now, cost, receipt);
            changed |= next[i] != own;
            neutral &= next[i] == PackedTransition.EMPTY;
        }
        return !changed ? state : neutral ? EMPTY : next;
    }
}
