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
 * packed it takes 40 bytes (the five values and the next-unit hint in 32, the receipt in 8)
 * instead of a record's 48. Only {@code limit} and the receipt have fields of their own; the two
 * durations sit in the low 48 bits of two longs whose next 15 and 16 bits hold the halves of
 * {@code remaining}, and the sign bit of the first says whether the call is allowed. An allowed
 * call has no wait, so its 48 bits hold the time until its next unit instead. So durations above
 * 2^48-2 ms, about 8,900 years, are reported as that, except that {@link #NEVER} is kept exactly;
 * every other value is kept exactly.
 */
public sealed class Decision permits SeveralDecision {

	/** {@link #retryAfterMillis()} of a call that no amount of waiting lets through. */
	public static final long NEVER = Long.MAX_VALUE;

	private static final int DURATION_BITS = 48;

	private static final long DURATION_MASK = (1L << DURATION_BITS) - 1;

	/** The 48-bit pattern that stands for a {@code retryAfterMillis} of {@link #NEVER}. */
	private static final long NEVER_PATTERN = DURATION_MASK;

	/** The longest duration kept, 2^48-2 ms; longer ones are reported as this. */
	private static final long MAX_DURATION_MILLIS = NEVER_PATTERN - 1;

	/** The sign bit of {@link #retryAfterAndHighRemaining}: set for an allowed call. */
	private static final long ALLOWED = Long.MIN_VALUE;

	/** {@code remaining} is split into its high 15 and low 16 bits. */
	private static final int REMAINING_LOW_BITS = 16;

	private static final int REMAINING_LOW_MASK = (1 << REMAINING_LOW_BITS) - 1;

	/** The high 15 bits of {@code remaining}, below the allowed flag. */
	private static final int HIGH_REMAINING_MASK = (1 << 15) - 1;

	private final int limit;

	/**
	 * {@code retryAfterMillis} of a refusal (saturated, or the NEVER pattern), or the time until the
	 * next unit of an allowed call (saturated), in the low 48 bits; the high 15 bits of
	 * {@code remaining} above; {@link #ALLOWED} in the sign bit.
	 */
	private final long retryAfterAndHighRemaining;

	/**
	 * {@code resetAfterMillis} (saturated) in the low 48 bits; the low 16 bits of
	 * {@code remaining} above.
	 */
	private final long resetAfterAndLowRemaining;

	/**
	 * The store's stamp of what an allowed call took, handed back with a refund so that the refund
	 * undoes exactly that call; 0 when the store gives none. Bookkeeping, not part of the decision's
	 * value: not compared by {@link #equals} nor printed.
	 */
	private final long receipt;

	/**
	 * Creates a decision. Durations above 2^48-2 ms, about 8,900 years, are reported as that,
	 * except a {@code retryAfterMillis} of {@link #NEVER}.
	 * @param allowed whether the call may proceed
	 * @param limit the policy's quota (calls or tokens per window); 1 for a lockout
	 * @param remaining how many units a caller could still take right now
	 * @param retryAfterMillis 0 when allowed; otherwise how long until the same call could pass,
	 * or {@link #NEVER} when the call's cost can never be granted by the policy
	 * @param resetAfterMillis how long until the key's state is neutral (as if never used) again
	 * @throws IllegalArgumentException if a count or {@code resetAfterMillis} is negative, or if
	 * {@code retryAfterMillis} is not 0 when allowed and positive when rejected
	 */
	Decision(boolean allowed, int limit, int remaining, long retryAfterMillis, long resetAfterMillis) {
		this(allowed, limit, remaining, retryAfterMillis, resetAfterMillis,
				(allowed && remaining < limit) ? resetAfterMillis : 0, 0);
	}

	Decision(boolean allowed, int limit, int remaining, long retryAfterMillis, long resetAfterMillis,
			long nextUnitAfterMillis, long receipt) {
		if (remaining < 0 || limit < 0) {
			throw new IllegalArgumentException("limit and remaining must not be negative");
		}
		if (resetAfterMillis < 0) {
			throw new IllegalArgumentException("resetAfterMillis must not be negative");
		}
		if (allowed ? retryAfterMillis != 0 : retryAfterMillis <= 0) {
			throw new IllegalArgumentException(
					"retryAfterMillis must be 0 when allowed and positive when rejected, was " + retryAfterMillis);
		}
		if (nextUnitAfterMillis < 0) {
			throw new IllegalArgumentException("nextUnitAfterMillis must not be negative, was " + nextUnitAfterMillis);
		}
		if (receipt < 0) {
			throw new IllegalArgumentException("receipt must not be negative, was " + receipt);
		}
		long low = allowed ? ALLOWED | saturated(nextUnitAfterMillis)
				: (retryAfterMillis == NEVER) ? NEVER_PATTERN : saturated(retryAfterMillis);
		this.limit = limit;
		this.retryAfterAndHighRemaining = low | ((long) (remaining >>> REMAINING_LOW_BITS) << DURATION_BITS);
		this.resetAfterAndLowRemaining = saturated(resetAfterMillis)
				| ((long) (remaining & REMAINING_LOW_MASK) << DURATION_BITS);
		this.receipt = receipt;
	}

	/** A copy of a decision with another receipt; for {@link SeveralDecision} too. */
	Decision(Decision decision, long receipt) {
		this.limit = decision.limit;
		this.retryAfterAndHighRemaining = decision.retryAfterAndHighRemaining;
		this.resetAfterAndLowRemaining = decision.resetAfterAndLowRemaining;
		this.receipt = receipt;
	}

	/**
	 * Returns this decision with a store's receipt: for stores (and wrappers of stores) that
	 * stamp what an allowed call took, see {@link #receipt()}.
	 * @param receipt the stamp, not negative
	 * @return an equal decision carrying {@code receipt}
	 * @throws IllegalArgumentException for a negative receipt
	 */
	public Decision withReceipt(long receipt) {
		if (receipt < 0) {
			throw new IllegalArgumentException("receipt must not be negative, was " + receipt);
		}
		return (receipt == this.receipt) ? this : new Decision(this, receipt);
	}

	/**
	 * Returns what the store stamped on what this (allowed) call took: a refund hands it back
	 * ({@link Limiter#refund(String, int, long)}) so that it undoes exactly this call, or nothing
	 * once what the call took is gone. Its meaning is the store's and the algorithm's own (a
	 * window's start, an attempt's time); 0 when the store gives none.
	 * @return the receipt, not negative
	 */
	public long receipt() {
		return this.receipt;
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
	 * allocates nothing else.
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
	public static Decision allow(int limit, int remaining, long resetAfterMillis, long nextUnitAfterMillis,
			long receipt) {
		return new Decision(true, limit, remaining, 0, resetAfterMillis, nextUnitAfterMillis, receipt);
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
		return this.limit;
	}

	/**
	 * Returns how many units a caller could still take right now.
	 * @return units left, not negative
	 */
	public int remaining() {
		int high = (int) (this.retryAfterAndHighRemaining >>> DURATION_BITS) & HIGH_REMAINING_MASK;
		int low = (int) (this.resetAfterAndLowRemaining >>> DURATION_BITS);
		return (high << REMAINING_LOW_BITS) | low;
	}

	/**
	 * Returns how long until the same call could pass. Durations above 2^48-2 ms, about 8,900
	 * years, are reported as that; {@link #NEVER} is reported exactly.
	 * @return 0 when allowed; otherwise the wait in milliseconds, at least 1, or {@link #NEVER}
	 * when the call's cost can never be granted by the policy
	 */
	public long retryAfterMillis() {
		if (allowed()) {
			return 0;
		}
		long pattern = retryAfterPattern();
		return (pattern == NEVER_PATTERN) ? NEVER : pattern;
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
		if (allowed()) {
			return retryAfterPattern();
		}
		return canSucceedLater() ? retryAfterPattern() : resetAfterMillis();
	}

	/**
	 * Returns {@link #nextUnitAfterMillis()} in whole seconds, rounded up, as {@code RateLimit}'s
	 * {@code t} wants it.
	 * @return seconds
	 */
	public long nextUnitAfterSeconds() {
		return ceilSeconds(nextUnitAfterMillis());
	}

	/**
	 * Returns how long until the key's state is neutral (as if never used) again. Durations above
	 * 2^48-2 ms, about 8,900 years, are reported as that.
	 * @return the time in milliseconds, not negative
	 */
	public long resetAfterMillis() {
		return this.resetAfterAndLowRemaining & DURATION_MASK;
	}

	/**
	 * Whether waiting can ever let this call through.
	 * @return false only for a cost above what the policy can grant
	 */
	public boolean canSucceedLater() {
		return allowed() || retryAfterPattern() != NEVER_PATTERN;
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
		return ceilSeconds(retryAfterMillis());
	}

	/**
	 * Returns the time until reset in whole seconds, rounded up.
	 * @return seconds
	 */
	public long resetAfterSeconds() {
		return ceilSeconds(resetAfterMillis());
	}

	@Override
	public boolean equals(Object obj) {
		// each value has one encoding, so equal fields mean equal accessors and the other way round;
		// an allowed call's next-unit hint is left out
		return (obj instanceof Decision other) && this.limit == other.limit
				&& valueBits(this.retryAfterAndHighRemaining) == valueBits(other.retryAfterAndHighRemaining)
				&& this.resetAfterAndLowRemaining == other.resetAfterAndLowRemaining;
	}

	@Override
	public int hashCode() {
		// combined as a record combines its components
		int hash = Boolean.hashCode(allowed());
		hash = 31 * hash + Integer.hashCode(this.limit);
		hash = 31 * hash + Integer.hashCode(remaining());
		hash = 31 * hash + Long.hashCode(retryAfterMillis());
		return 31 * hash + Long.hashCode(resetAfterMillis());
	}

	@Override
	public String toString() {
		return "Decision[allowed=" + allowed() + ", limit=" + this.limit + ", remaining=" + remaining()
				+ ", retryAfterMillis=" + retryAfterMillis() + ", resetAfterMillis=" + resetAfterMillis() + "]";
	}

	/** The bits of the first long that are the decision's value: all of them but an allowed call's hint. */
	private static long valueBits(long retryAfterAndHighRemaining) {
		return (retryAfterAndHighRemaining < 0) ? retryAfterAndHighRemaining & ~DURATION_MASK
				: retryAfterAndHighRemaining;
	}

	private long retryAfterPattern() {
		return this.retryAfterAndHighRemaining & DURATION_MASK;
	}

	private static long saturated(long millis) {
		return Math.min(millis, MAX_DURATION_MILLIS);
	}

	private static long ceilSeconds(long millis) {
		return (millis == NEVER) ? NEVER / 1000 : (millis + 999) / 1000;
	}

}
