package dev.throttle;

import java.time.Duration;

/**
 * The outcome of one throttling decision. Immutable and thread-safe; equal when all five
 * accessors are equal, and printed as a record with the same components would be; the
 * {@link #receipt()} a store stamps on an allowed call, and the {@link #nextUnitAfterMillis() time
 * until the next unit} it tells an allowed call, are hints beside the decision's value and take no
 * part in either.
 *
 * <p>Not a record because it is packed: every decision on the hot path allocates one, and
 * packed it takes 32 bytes (the five values, the next-unit hint and, for an allowed call, the
 * receipt) instead of a record's 48. Only {@code limit} has a field of its own; the two
 * durations sit in the low 48 bits of two longs whose next 15 and 16 bits hold the halves of
 * {@code remaining}, and the sign bit of the first says whether the call is allowed. An allowed
 * call has no wait, so its 48 bits hold the time until its next unit instead. So durations above
 * 2^48-2 ms, about 8,900 years, are reported as that, except that {@link #NEVER} is kept exactly;
 * every other value is kept exactly. An allowed call with a receipt is packed tighter in the same
 * fields when its values are as small as a store's usually are ({@link DecisionBits} says how);
 * one whose values are larger, or a refusal given a receipt, carries it in a subclass's field of
 * its own, 8 bytes more.
 */
public sealed class Decision permits SeveralDecision, Decision.Stamped, Decision.Reserved {

    /** {@link #retryAfterMillis()} of a call that no amount of waiting lets through. */
    public static final long NEVER = Long.MAX_VALUE;

    /** The limit; in the stamped layout, also its flag and the high bits of {@code remaining}. */
    private final int limitBits;

    /** The other values, the next-unit hint and maybe the receipt, packed as {@link DecisionBits} lays them out. */
    private final long retryAfterAndHighRemaining;

    private final long resetAfterAndLowRemaining;

    /**
     * Creates a decision with no receipt, whose next unit comes when its state is neutral (never too
     * early). {@link DecisionBits#check} says what each value means and which values it refuses.
     */
    Decision(boolean allowed, int limit, int remaining, long retryAfterMillis, long resetAfterMillis) {
        this(
                allowed,
                limit,
                remaining,
                retryAfterMillis,
                resetAfterMillis,
                (allowed && remaining < limit) ? resetAfterMillis : 0,
                0);
    }

    /**
     * Creates a decision with a store's next-unit hint, and checks a receipt that a {@link Stamped}
     * subclass keeps; see {@link #allow(int, int, long, long, long)}.
     */
    Decision(
            boolean allowed,
            int limit,
            int remaining,
            long retryAfterMillis,
            long resetAfterMillis,
            long nextUnitAfterMillis,
            long receipt) {
        DecisionBits.check(allowed, limit, remaining, retryAfterMillis, resetAfterMillis, nextUnitAfterMillis, receipt);
        this.limitBits = limit;
        this.retryAfterAndHighRemaining = DecisionBits.first(allowed, remaining, retryAfterMillis, nextUnitAfterMillis);
        this.resetAfterAndLowRemaining = DecisionBits.second(remaining, resetAfterMillis);
    }

    /** An allowed call's checked values with a receipt, in the stamped layout (they fit it). */
    private Decision(int limit, int remaining, long resetAfterMillis, long nextUnitAfterMillis, long receipt) {
        this.limitBits = DecisionBits.stampedInt(limit, remaining);
        this.retryAfterAndHighRemaining = DecisionBits.stampedFirst(remaining, nextUnitAfterMillis, receipt);
        this.resetAfterAndLowRemaining = DecisionBits.stampedSecond(resetAfterMillis, receipt);
    }

    /**
     * A copy of a decision's values and hint, and of its receipt where its fields hold one; for
     * {@link SeveralDecision}, which keeps a receipt of its own, and {@link Stamped} of a decision
     * without one.
     */
    Decision(Decision decision) {
        this.limitBits = decision.limitBits;
        this.retryAfterAndHighRemaining = decision.retryAfterAndHighRemaining;
        this.resetAfterAndLowRemaining = decision.resetAfterAndLowRemaining;
    }

    /**
     * Returns this decision with a store's receipt: for stores (and wrappers of stores) that
     * stamp what an allowed call took, see {@link #receipt()}.
     * @param receipt the stamp, not negative
     * @return an equal decision carrying {@code receipt}
     * @throws IllegalArgumentException for a negative receipt
     */
    public Decision withReceipt(long receipt) {
        DecisionBits.checkReceipt(receipt);
        if (receipt == receipt()) {
            return this;
        }
        if (allowed()) {
            return allow(limit(), remaining(), resetAfterMillis(), nextUnitAfterMillis(), receipt);
        }
        // a refusal is always in the plain layout
        return (receipt == 0) ? new Decision(this) : new Stamped(this, receipt);
    }

    /**
     * Returns what the store stamped on what this (allowed) call took: a refund hands it back
     * ({@link Limiter#refund(String, int, long)}) so that it undoes exactly this call, or nothing
     * once what the call took is gone. Its meaning is the store's and the algorithm's own (a
     * window's start, an attempt's time); 0 when the store gives none.
     * @return the receipt, not negative
     */
    public long receipt() {
        return DecisionBits.receipt(this.limitBits, this.retryAfterAndHighRemaining, this.resetAfterAndLowRemaining);
    }

    /**
     * Combines the decisions of a policy's several limits, each decided over the same call: allowed
     * only when every limit allows it; told the fewest units left and, refused, the longest wait
     * among the limits that refuse. Its {@link #limit(int) limits} are the parts, in order, each with
     * its own receipt.
     * @param parts one decision per limit, at least one
     * @return the combined decision
     */
    public static Decision ofLimits(Decision... parts) {
        return SeveralDecision.of(parts);
    }

    /**
     * Returns how many limits decided this call: 1, except for a policy with several limits.
     * @return the number of limits
     */
    public int limitCount() {
        return 1;
    }

    /**
     * Returns the decision of one of the limits that decided this call.
     * @param index from 0 to {@link #limitCount()} - 1
     * @return that limit's decision; this decision itself for a policy with one limit
     */
    public Decision limit(int index) {
        if (index != 0) {
            throw new IndexOutOfBoundsException(index);
        }
        return this;
    }

    /**
     * An allowed decision.
     * @param limit the policy's quota
     * @param remaining units left
     * @param resetAfterMillis time until the state is neutral
     * @return the decision
     */
    public static Decision allow(int limit, int remaining, long resetAfterMillis) {
        return new Decision(true, limit, remaining, 0, resetAfterMillis);
    }

    /**
     * An allowed decision, with what a store knows beside it: when the key's next unit comes, and the
     * receipt of what the call took. One object, whatever the hints: the memory store's hot path
     * allocates nothing else, and where the values are as small as a store's usually are (see
     * {@link DecisionBits}), a 32-byte one, as a decision without a receipt.
     * @param limit the policy's quota
     * @param remaining units left
     * @param resetAfterMillis time until the state is neutral
     * @param nextUnitAfterMillis time until one unit more than {@code remaining} is available; 0 when
     * nothing is in use
     * @param receipt the store's stamp of what the call took, not negative; 0 for none
     * @return the decision
     * @throws IllegalArgumentException when a value is negative
     * @see #nextUnitAfterMillis()
     * @see #receipt()
     */
    public static Decision allow(
            int limit, int remaining, long resetAfterMillis, long nextUnitAfterMillis, long receipt) {
        if (receipt == 0) {
            return new Decision(true, limit, remaining, 0, resetAfterMillis, nextUnitAfterMillis, 0);
        }
        DecisionBits.check(true, limit, remaining, 0, resetAfterMillis, nextUnitAfterMillis, receipt);
        return DecisionBits.fitsStamped(limit, remaining, resetAfterMillis, nextUnitAfterMillis, receipt)
                ? new Decision(limit, remaining, resetAfterMillis, nextUnitAfterMillis, receipt)
                : new Stamped(true, limit, remaining, 0, resetAfterMillis, nextUnitAfterMillis, receipt);
    }

    /**
     * An allowed decision whose call must wait before it proceeds: a reservation. The store has
     * already taken what the call costs, for a turn {@code waitMillis} from now; the caller waits that
     * long, then proceeds, or gives the reservation back by its receipt
     * ({@link Limiter#refund(String, int, long)}) when it no longer wants the turn.
     * @param limit the policy's quota
     * @param remaining units left now (0 while callers wait)
     * @param resetAfterMillis time until the state is neutral
     * @param nextUnitAfterMillis time until one unit more than {@code remaining} is available
     * @param receipt the store's stamp of what the call took, at least 1
     * @param waitMillis how long until the call's turn; 0 makes an ordinary allowed decision
     * @return the decision
     * @throws IllegalArgumentException when a value is negative
     * @see #waitMillis()
     */
    public static Decision reserved(
            int limit, int remaining, long resetAfterMillis, long nextUnitAfterMillis, long receipt, long waitMillis) {
        if (waitMillis <= 0) {
            if (waitMillis < 0) {
                throw new IllegalArgumentException("waitMillis must not be negative, was " + waitMillis);
            }
            return allow(limit, remaining, resetAfterMillis, nextUnitAfterMillis, receipt);
        }
        return new Reserved(
                new Decision(true, limit, remaining, 0, resetAfterMillis, nextUnitAfterMillis, receipt),
                receipt,
                waitMillis);
    }

    /**
     * Returns how long an allowed call must wait before it proceeds: 0 for a call allowed now, and
     * for a reservation (a call allowed for a later turn, see
     * {@link Limiter#reserve(String, int, long)}) the time until its turn. Part of the decision's value.
     * @return milliseconds, not negative; 0 for a refusal
     */
    public long waitMillis() {
        return 0;
    }

    /**
     * Returns {@link #waitMillis()} as a duration.
     * @return the wait before proceeding; {@link Duration#ZERO} for a call allowed now
     */
    public Duration waitTime() {
        return Duration.ofMillis(waitMillis());
    }

    /**
     * A refused decision.
     * @param limit the policy's quota
     * @param remaining units left (fewer than the call needs)
     * @param retryAfterMillis time until the same call could pass, at least 1
     * @param resetAfterMillis time until the state is neutral
     * @return the decision
     */
    public static Decision reject(int limit, int remaining, long retryAfterMillis, long resetAfterMillis) {
        return new Decision(false, limit, remaining, Math.max(1, retryAfterMillis), resetAfterMillis);
    }

    /**
     * A refusal of a cost that the policy can never grant, however long the caller waits.
     * @param limit the policy's quota
     * @return the decision
     */
    public static Decision neverAllowed(int limit) {
        return new Decision(false, limit, 0, NEVER, 0);
    }

    /**
     * Returns whether the call may proceed.
     * @return whether the call may proceed
     */
    public boolean allowed() {
        return this.retryAfterAndHighRemaining < 0;
    }

    /**
     * Returns the policy's quota.
     * @return the policy's quota (calls or tokens per window); 1 for a lockout
     */
    public int limit() {
        return DecisionBits.limit(this.limitBits);
    }

    /**
     * Returns how many units a caller could still take right now.
     * @return units left, not negative
     */
    public int remaining() {
        return DecisionBits.remaining(this.limitBits, this.retryAfterAndHighRemaining, this.resetAfterAndLowRemaining);
    }

    /**
     * Returns how long until the same call could pass. Durations above 2^48-2 ms, about 8,900
     * years, are reported as that; {@link #NEVER} is reported exactly.
     * @return 0 when allowed; otherwise the wait in milliseconds, at least 1, or {@link #NEVER}
     * when the call's cost can never be granted by the policy
     */
    public long retryAfterMillis() {
        return DecisionBits.retryAfterMillis(this.retryAfterAndHighRemaining);
    }

    /**
     * Returns how long until the key has one unit more than {@link #remaining()}: what
     * {@code RateLimit}'s {@code t} tells a client. For an allowed call, what its store said (or, when
     * it said nothing, the time until the state is neutral, which is never too early); 0 when nothing
     * is in use. For a refusal, its {@link #retryAfterMillis()}, the wait its own call needs, so that
     * {@code Retry-After} is never earlier than {@code t}; for a cost no wait lets through, the time
     * until the state is neutral. A hint beside the decision's value: not compared by
     * {@link #equals} nor printed. Durations above 2^48-2 ms, about 8,900 years, are reported as that.
     * @return the time in milliseconds, not negative
     */
    public long nextUnitAfterMillis() {
        return canSucceedLater()
                ? DecisionBits.nextUnit(this.limitBits, this.retryAfterAndHighRemaining)
                : resetAfterMillis();
    }

    /**
     * Returns {@link #nextUnitAfterMillis()} in whole seconds, rounded up, as {@code RateLimit}'s
     * {@code t} wants it.
     * @return seconds
     */
    public long nextUnitAfterSeconds() {
        return DecisionBits.ceilSeconds(nextUnitAfterMillis());
    }

    /**
     * Returns how long until the key's state is neutral (as if never used) again. Durations above
     * 2^48-2 ms, about 8,900 years, are reported as that.
     * @return the time in milliseconds, not negative
     */
    public long resetAfterMillis() {
        return DecisionBits.resetAfterMillis(this.limitBits, this.resetAfterAndLowRemaining);
    }

    /**
     * Whether waiting can ever let this call through.
     * @return false only for a cost above what the policy can grant
     */
    public boolean canSucceedLater() {
        return !DecisionBits.never(this.retryAfterAndHighRemaining);
    }

    /**
     * Returns {@link #retryAfterMillis()} as a duration.
     * @return the wait; {@link Duration#ZERO} when allowed
     */
    public Duration retryAfter() {
        return Duration.ofMillis(retryAfterMillis());
    }

    /**
     * Returns {@link #resetAfterMillis()} as a duration.
     * @return time until the state is neutral
     */
    public Duration resetAfter() {
        return Duration.ofMillis(resetAfterMillis());
    }

    /**
     * Returns the wait in whole seconds, rounded up, as HTTP {@code Retry-After} wants it.
     * @return 0 when allowed, otherwise at least 1
     */
    public long retryAfterSeconds() {
        return DecisionBits.ceilSeconds(retryAfterMillis());
    }

    /**
     * Returns the time until reset in whole seconds, rounded up.
     * @return seconds
     */
    public long resetAfterSeconds() {
        return DecisionBits.ceilSeconds(resetAfterMillis());
    }

    @Override
    public boolean equals(Object obj) {
        if (!(obj instanceof Decision other)) {
            return false;
        }
        if ((this.limitBits | other.limitBits) < 0) {
            // one is in the stamped layout, an allowed call's: the values, read back, compared
            return allowed() == other.allowed()
                    && limit() == other.limit()
                    && remaining() == other.remaining()
                    && resetAfterMillis() == other.resetAfterMillis()
                    && waitMillis() == other.waitMillis();
        }
        // in the plain layout, equal fields mean equal accessors and the other way round, but for an
        // allowed call's hint
        return this.limitBits == other.limitBits
                && DecisionBits.sameValue(this.retryAfterAndHighRemaining, other.retryAfterAndHighRemaining)
                && this.resetAfterAndLowRemaining == other.resetAfterAndLowRemaining
                && waitMillis() == other.waitMillis();
    }

    @Override
    public int hashCode() {
        // combined as a record combines its components
        int hash = Boolean.hashCode(allowed());
        hash = 31 * hash + Integer.hashCode(limit());
        hash = 31 * hash + Integer.hashCode(remaining());
        hash = 31 * hash + Long.hashCode(retryAfterMillis());
        hash = 31 * hash + Long.hashCode(resetAfterMillis());
        long wait = waitMillis();
        return (wait == 0) ? hash : 31 * hash + Long.hashCode(wait);
    }

    @Override
    public String toString() {
        return "Decision[allowed=" + allowed() + ", limit=" + limit() + ", remaining=" + remaining()
                + ", retryAfterMillis=" + retryAfterMillis() + ", resetAfterMillis=" + resetAfterMillis()
                + ((waitMillis() == 0) ? "]" : ", waitMillis=" + waitMillis() + "]");
    }

    /**
     * A decision with a store's receipt that the stamped layout cannot hold: a refusal given one, or
     * an allowed call whose values are too large for it. Only these pay the receipt's 8 bytes.
     */
    static final class Stamped extends Decision {

        /** See {@link #receipt()}; bookkeeping, not part of the decision's value: not compared nor printed. */
        private final long receipt;

        Stamped(
                boolean allowed,
                int limit,
                int remaining,
                long retryAfterMillis,
                long resetAfterMillis,
                long nextUnitAfterMillis,
                long receipt) {
            super(allowed, limit, remaining, retryAfterMillis, resetAfterMillis, nextUnitAfterMillis, receipt);
            this.receipt = receipt;
        }

        Stamped(Decision decision, long receipt) {
            super(decision);
            this.receipt = receipt;
        }

        @Override
        public long receipt() {
            return this.receipt;
        }
    }

    /**
     * A reservation: an allowed call that waits for its turn, with the receipt that gives the turn
     * back. Only reservations pay for the wait's 8 bytes.
     */
    static final class Reserved extends Decision {

        private final long receipt;

        private final long waitMillis;

        Reserved(Decision decision, long receipt, long waitMillis) {
            super(decision);
            this.receipt = receipt;
            this.waitMillis = waitMillis;
        }

        @Override
        public long receipt() {
            return this.receipt;
        }

        @Override
        public long waitMillis() {
            return this.waitMillis;
        }

        /** Keeps the wait: a failure policy marks the receipts of what its fallback decided. */
        @Override
        public Decision withReceipt(long receipt) {
            DecisionBits.checkReceipt(receipt);
            return (receipt == this.receipt) ? this : new Reserved(this, receipt, this.waitMillis);
        }
    }
}
