package dev.throttle;

import java.util.Arrays;

/**
 * The decision of a policy with several limits: one {@link Decision} per limit, combined. Allowed
 * only when every limit allows the call; {@code remaining} is the fewest left among the limits,
 * with that limit's quota; a refusal waits for the longest wait among the limits that refuse, and
 * the state is neutral once every limit's is. Its own receipt is only a flag (1: a store stamped
 * the parts); each part carries its limit's receipt, which is what a refund gives back.
 */
final class SeveralDecision extends Decision {

    private final Decision[] parts;

    /** 1 when a store stamped the parts, else 0. */
    private final long receipt;

    private SeveralDecision(Decision combined, long receipt, Decision[] parts) {
        super(combined);
        this.receipt = receipt;
        this.parts = parts;
    }

    static Decision of(Decision... parts) {
        if (parts.length == 0) {
            throw new IllegalArgumentException("a decision needs at least one limit");
        }
        boolean allowed = true;
        Decision tightest = parts[0];
        long wait = 0;
        long reset = 0;
        long stamped = 0;
        for (Decision part : parts) {
            allowed &= part.allowed();
            if (part.remaining() < tightest.remaining()) {
                tightest = part;
            }
            if (!part.allowed()) {
                wait = Math.max(wait, part.retryAfterMillis());
            }
            reset = Math.max(reset, part.resetAfterMillis());
            stamped |= part.receipt();
        }
        Decision combined = allowed
                ? Decision.allow(
                        tightest.limit(), tightest.remaining(), reset, nextUnitOf(parts), (stamped != 0) ? 1 : 0)
                : new Decision(false, tightest.limit(), tightest.remaining(), wait, reset);
        return new SeveralDecision(combined, combined.receipt(), parts.clone());
    }

    /**
     * When one unit more than the fewest left is available: the longest such wait among the limits
     * that have no more than the fewest left (a unit back on one limit alone is no unit).
     */
    private static long nextUnitOf(Decision[] parts) {
        int fewest = Integer.MAX_VALUE;
        for (Decision part : parts) {
            fewest = Math.min(fewest, part.remaining());
        }
        long next = 0;
        for (Decision part : parts) {
            if (part.remaining() == fewest) {
                next = Math.max(next, part.nextUnitAfterMillis());
            }
        }
        return next;
    }

    @Override
    public Decision withReceipt(long receipt) {
        return (receipt == this.receipt) ? this : new SeveralDecision(this, receipt, this.parts);
    }

    @Override
    public long receipt() {
        return this.receipt;
    }

    @Override
    public int limitCount() {
        return this.parts.length;
    }

    @Override
    public Decision limit(int index) {
        return this.parts[index];
    }

    @Override
    public String toString() {
        return super.toString() + Arrays.toString(this.parts);
    }
}
