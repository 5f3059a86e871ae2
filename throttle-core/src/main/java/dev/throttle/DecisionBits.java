package dev.throttle;

/**
 * How a {@link Decision} packs its values into two longs, and reads them back (its class comment
 * says why it is packed). The first long holds {@code retryAfterMillis} of a refusal (saturated, or
 * {@link #NEVER_PATTERN}), or the time until the next unit of an allowed call (saturated), in its
 * low 48 bits; the high 15 bits of {@code remaining} above; {@link #ALLOWED} in the sign bit. The
 * second holds {@code resetAfterMillis} (saturated) in its low 48 bits, the low 16 bits of
 * {@code remaining} above. Each value has one encoding, so equal longs mean equal values.
 *
 * <p>Every method is a few operations on its arguments, called on every decision: none allocates.
 */
final class DecisionBits {

    private static final int DURATION_BITS = 48;

    private static final long DURATION_MASK = (1L << DURATION_BITS) - 1;

    /** The 48-bit pattern that stands for a {@code retryAfterMillis} of {@link Decision#NEVER}. */
    private static final long NEVER_PATTERN = DURATION_MASK;

    /** The longest duration kept, 2^48-2 ms; longer ones are reported as this. */
    private static final long MAX_DURATION_MILLIS = NEVER_PATTERN - 1;

    /** The sign bit of the first long: set for an allowed call. */
    private static final long ALLOWED = Long.MIN_VALUE;

    /** {@code remaining} is split into its high 15 and low 16 bits. */
    private static final int REMAINING_LOW_BITS = 16;

    private static final int REMAINING_LOW_MASK = (1 << REMAINING_LOW_BITS) - 1;

    /** The high 15 bits of {@code remaining}, below the allowed flag. */
    private static final int HIGH_REMAINING_MASK = (1 << 15) - 1;

    /**
     * The sign bit of the int: set when the decision is held in the stamped layout (below), which
     * only an allowed call with a receipt takes.
     */
    static final int STAMPED = Integer.MIN_VALUE;

    /** The stamped layout's widths: counts below 2^23, durations below 2^30 ms, receipts below 2^52. */
    private static final int STAMPED_COUNT_BITS = 23;

    private static final int STAMPED_COUNT_MASK = (1 << STAMPED_COUNT_BITS) - 1;

    private static final int STAMPED_DURATION_BITS = 30;

    private static final long STAMPED_DURATION_MASK = (1L << STAMPED_DURATION_BITS) - 1;

    private static final int STAMPED_RECEIPT_BITS = 52;

    /** The receipt's low bits, in the second long below its reset; its high 18 bits end the first long. */
    private static final int RECEIPT_LOW_BITS = 64 - STAMPED_DURATION_BITS;

    private static final long RECEIPT_LOW_MASK = (1L << RECEIPT_LOW_BITS) - 1;

    /** {@code remaining}'s low 15 bits sit in the first long, its high 8 bits in the int above the limit. */
    private static final int STAMPED_REMAINING_LOW_BITS = 15;

    private static final int STAMPED_REMAINING_LOW_MASK = (1 << STAMPED_REMAINING_LOW_BITS) - 1;

    /** Where the next-unit hint starts in the first long: above the receipt's high bits. */
    private static final int NEXT_UNIT_SHIFT = STAMPED_RECEIPT_BITS - RECEIPT_LOW_BITS;

    private DecisionBits() {}

    /*
     * The stamped layout. An allowed call that a store stamps needs a receipt beside its values, and
     * a field of its own for it would make every such decision 40 bytes instead of 32 (allowed calls
     * are most of a store's decisions). Its values fit in the same int and two longs when they are as
     * small as a store's usually are: a limit and a remaining below 2^23 (every policy's counts are),
     * durations below 2^30 ms (about 12 days) and a receipt below 2^52 (a time in microseconds since
     * 1970 is, until 2112). Then:
     *   int:    STAMPED | remaining's high 8 bits (30..23) | limit (22..0)
     *   first:  ALLOWED | remaining's low 15 bits (62..48) | next unit (47..18) | receipt's high 18 bits (17..0)
     *   second: reset (63..34) | receipt's low 34 bits (33..0)
     * Values that do not fit keep the plain layout, with the receipt in a field of a subclass.
     */

    /** Whether an allowed call's values and receipt fit the stamped layout (checked values, receipt above 0). */
    static boolean fitsStamped(
            int limit, int remaining, long resetAfterMillis, long nextUnitAfterMillis, long receipt) {
        return ((limit | remaining) >>> STAMPED_COUNT_BITS) == 0
                && ((resetAfterMillis | nextUnitAfterMillis) >>> STAMPED_DURATION_BITS) == 0
                && (receipt >>> STAMPED_RECEIPT_BITS) == 0;
    }

    static int stampedInt(int limit, int remaining) {
        return STAMPED | ((remaining >>> STAMPED_REMAINING_LOW_BITS) << STAMPED_COUNT_BITS) | limit;
    }

    static long stampedFirst(int remaining, long nextUnitAfterMillis, long receipt) {
        return ALLOWED
                | ((long) (remaining & STAMPED_REMAINING_LOW_MASK) << DURATION_BITS)
                | (nextUnitAfterMillis << NEXT_UNIT_SHIFT)
                | (receipt >>> RECEIPT_LOW_BITS);
    }

    static long stampedSecond(long resetAfterMillis, long receipt) {
        return (resetAfterMillis << RECEIPT_LOW_BITS) | (receipt & RECEIPT_LOW_MASK);
    }

    /** The limit, in either layout. */
    static int limit(int bits) {
        return (bits < 0) ? bits & STAMPED_COUNT_MASK : bits;
    }

    /** {@code remaining}, in either layout. */
    static int remaining(int bits, long first, long second) {
        if (bits < 0) {
            int high = (bits & ~STAMPED) >>> STAMPED_COUNT_BITS;
            int low = (int) (first >>> DURATION_BITS) & STAMPED_REMAINING_LOW_MASK;
            return (high << STAMPED_REMAINING_LOW_BITS) | low;
        }
        return remaining(first, second);
    }

    /** An allowed call's time until its next unit, in either layout. */
    static long nextUnit(int bits, long first) {
        return (bits < 0) ? (first >>> NEXT_UNIT_SHIFT) & STAMPED_DURATION_MASK : duration(first);
    }

    /** The time until the state is neutral, in either layout. */
    static long resetAfterMillis(int bits, long second) {
        return (bits < 0) ? second >>> RECEIPT_LOW_BITS : duration(second);
    }

    /** The receipt of the stamped layout; 0 in the plain one, which keeps no receipt. */
    static long receipt(int bits, long first, long second) {
        return (bits < 0)
                ? ((first & ((1L << NEXT_UNIT_SHIFT) - 1)) << RECEIPT_LOW_BITS) | (second & RECEIPT_LOW_MASK)
                : 0;
    }

    /**
     * Checks a decision's values. Durations above 2^48-2 ms, about 8,900 years, are then packed as
     * that, except a {@code retryAfterMillis} of {@link Decision#NEVER}.
     * @param allowed whether the call may proceed
     * @param limit the policy's quota (calls or tokens per window); 1 for a lockout
     * @param remaining how many units a caller could still take right now
     * @param retryAfterMillis 0 when allowed; otherwise how long until the same call could pass,
     * or {@link Decision#NEVER} when the call's cost can never be granted by the policy
     * @param resetAfterMillis how long until the key's state is neutral (as if never used) again
     * @param nextUnitAfterMillis see {@link Decision#nextUnitAfterMillis()}
     * @param receipt see {@link Decision#receipt()}
     * @throws IllegalArgumentException if a count, a receipt or a duration is negative, or if
     * {@code retryAfterMillis} is not 0 when allowed and positive when rejected
     */
    static void check(
            boolean allowed,
            int limit,
            int remaining,
            long retryAfterMillis,
            long resetAfterMillis,
            long nextUnitAfterMillis,
            long receipt) {
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
        checkReceipt(receipt);
    }

    static void checkReceipt(long receipt) {
        if (receipt < 0) {
            throw new IllegalArgumentException("receipt must not be negative, was " + receipt);
        }
    }

    /** The first long: the allowed flag, the wait or the next-unit hint, the high bits of remaining. */
    static long first(boolean allowed, int remaining, long retryAfterMillis, long nextUnitAfterMillis) {
        long low = allowed
                ? ALLOWED | saturated(nextUnitAfterMillis)
                : (retryAfterMillis == Decision.NEVER) ? NEVER_PATTERN : saturated(retryAfterMillis);
        return low | ((long) (remaining >>> REMAINING_LOW_BITS) << DURATION_BITS);
    }

    /** The second long: the time until the state is neutral, the low bits of remaining. */
    static long second(int remaining, long resetAfterMillis) {
        return saturated(resetAfterMillis) | ((long) (remaining & REMAINING_LOW_MASK) << DURATION_BITS);
    }

    static int remaining(long first, long second) {
        int high = (int) (first >>> DURATION_BITS) & HIGH_REMAINING_MASK;
        int low = (int) (second >>> DURATION_BITS);
        return (high << REMAINING_LOW_BITS) | low;
    }

    /** The duration in the low 48 bits of either long; in the first, of a refusal, maybe {@link #NEVER_PATTERN}. */
    static long duration(long bits) {
        return bits & DURATION_MASK;
    }

    /** Whether the first long is of a refusal that no wait lets through. */
    static boolean never(long first) {
        return first >= 0 && duration(first) == NEVER_PATTERN;
    }

    /** A refusal's wait, or {@link Decision#NEVER}; 0 for an allowed call. */
    static long retryAfterMillis(long first) {
        return (first < 0) ? 0 : never(first) ? Decision.NEVER : duration(first);
    }

    /**
     * Whether two first longs hold the same values: all of their bits but an allowed call's hint,
     * since each value has one encoding.
     */
    static boolean sameValue(long first, long otherFirst) {
        return valueBits(first) == valueBits(otherFirst);
    }

    private static long valueBits(long first) {
        return (first < 0) ? first & ~DURATION_MASK : first;
    }

    private static long saturated(long millis) {
        return Math.min(millis, MAX_DURATION_MILLIS);
    }

    /** Milliseconds in whole seconds, rounded up, as HTTP headers want them; {@link Decision#NEVER} kept as never. */
    static long ceilSeconds(long millis) {
        return (millis == Decision.NEVER) ? Decision.NEVER / 1000 : (millis + 999) / 1000;
    }
}
