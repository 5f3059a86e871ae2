package dev.throttle;

import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * GCRA: {@code limit} calls per {@code period}, with a burst of {@code limit}, kept as one score
 * per key (the theoretical arrival time, in microseconds). The interval between calls is kept in
 * whole microseconds, so a policy whose {@code period / limit} would be kept more than 1% short
 * (600,000 per second: 1.67 us kept as 1 us, a million per second) is refused when it is built.
 *
 * @param name the policy's name
 * @param limit calls allowed per period (n)
 * @param period the period (T)
 */
public record GcraPolicy(String name, int limit, Duration period) implements Policy {

    /** The {@code gcra} algorithm. */
    public static final Algorithm<GcraPolicy> ALGORITHM = new Descriptor();

    public GcraPolicy {
        Checks.name(name);
        Checks.quantity(name, "limit", limit);
        Checks.duration(name, "period", period);
        long periodMicros = period.toMillis() * 1000;
        long interval = periodMicros / limit;
        if (interval < 1) {
            throw new InvalidPolicyException(
                    name,
                    "limit",
                    "must be at most one call per microsecond of period, was " + limit + " per "
                            + Checks.format(period));
        }
        // both stores keep the interval in whole microseconds, rounded down: the rate they keep,
        // 1/interval, must not run more than 1% above the rate asked for, limit/period
        if (100 * periodMicros > 101L * limit * interval) {
            double exact = (double) periodMicros / limit;
            throw new InvalidPolicyException(
                    name,
                    "limit",
                    String.format(
                            Locale.ROOT,
                            "%d per period %s needs a call every %.3f microseconds, which the stores keep in whole"
                                    + " microseconds (%d, a rate %.1f%% too high); choose a limit and period whose"
                                    + " period/limit is within 1%% of a whole number of microseconds",
                            limit,
                            Checks.format(period),
                            exact,
                            interval,
                            (exact / interval - 1) * 100));
        }
    }

    @Override
    public Algorithm<GcraPolicy> algorithm() {
        return ALGORITHM;
    }

    /**
     * Returns the emission interval T/n in microseconds, rounded down so that a burst of exactly
     * {@code limit} calls fits.
     * @return microseconds between calls at the sustained rate
     */
    long emissionIntervalMicros() {
        return this.period.toMillis() * 1000 / this.limit;
    }

    /**
     * Returns the burst tolerance: how far ahead of now the score may run, {@code limit} intervals.
     * Equals the period when the period divides evenly by the limit.
     * @return microseconds
     */
    long toleranceMicros() {
        return emissionIntervalMicros() * this.limit;
    }

    @Override
    public int quota() {
        return this.limit;
    }

    @Override
    public Duration window() {
        return this.period;
    }

    @Override
    public int maxCost() {
        return this.limit;
    }

    @Override
    public Duration idleExpiry() {
        return this.period;
    }

    /**
     * The {@code gcra} algorithm: its parameters, its numbers and its transition.
     */
    public static final class Descriptor extends PackedAlgorithm<GcraPolicy> {

        /** Creates the algorithm: use {@link GcraPolicy#ALGORITHM}. */
        public Descriptor() {
            super("gcra", GcraPolicy.class, "limit", "period");
        }

        /** Its transition reserves a later turn ({@link PackedTransition#reserve}). */
        @Override
        public boolean takesWait() {
            return true;
        }

        /** Its transition carries a debt ({@link PackedTransition#charge}). */
        @Override
        public boolean takesActualCost() {
            return true;
        }

        @Override
        protected GcraPolicy build(String name, Settings settings) {
            return new GcraPolicy(
                    name, settings.required("limit", Integer.class), settings.required("period", Duration.class));
        }

        @Override
        protected List<Object> values(GcraPolicy policy) {
            return List.of(policy.limit(), policy.period());
        }

        @Override
        protected long[] numbers(GcraPolicy policy) {
            return new long[] {policy.limit(), policy.emissionIntervalMicros(), policy.toleranceMicros()};
        }

        @Override
        protected PackedTransition transition(GcraPolicy policy, Rates rates) {
            return new Transition(policy, rates);
        }
    }

    /**
     * Over one long: the theoretical arrival time (TAT) in microseconds, with the emission interval
     * it was written under (an id that the policy name's {@link Rates} gives it), so that a key's state
     * means the same under other numbers of its policy (a plan, a change at run time): what runs
     * ahead of now under interval {@code I'} is {@code ceil(ahead * I / I')} under {@code I}, the same
     * number of calls (a customer who used a free plan's 10 of 10 per minute has 990 of a pro plan's
     * 1,000 per minute left). A twin in another store keeps the interval beside its
     * score too and converts alike, in doubles, so both round the same way.
     *
     * <p>The cooldown document's rule, with emission interval {@code I = T/n} (microseconds, rounded
     * down) and tolerance {@code n * I} (equal to T when n divides T): the trial score is
     * {@code max(TAT, now) + cost * I}; the call passes when the trial score is at most
     * {@code now + n * I}, and the trial score is stored; otherwise nothing is written and the caller
     * may retry after {@code trial - n * I - now}. Microseconds keep rates such as 3 per second exact
     * to a microsecond instead of rounding them to whole milliseconds. A TAT ahead of now is the
     * algorithm's ordinary state, so a clock that stepped back needs no care of its own.
     * {@link #EMPTY} is a TAT long past. With {@code r} whole intervals left, the next unit comes once
     * the score is {@code (r + 1) * I} within the tolerance.
     *
     * <p>Packing: the interval's id in bits 51 to 62, the TAT's low 51 bits below, read back as the
     * TAT nearest to now with those bits (exact within 2^50 us, about 35 years, of now).
     *
     * <p>Receipt: the TAT the call stored. The call took the span {@code [receipt - cost * I, receipt]}
     * of the score; a refund takes back what of that span is still ahead of now, never more than the
     * score runs ahead of now, so a refund after the span went by gives back nothing, and one of a
     * call whose span is half gone gives back half. The span is not clipped at the current TAT:
     * earlier refunds moved the TAT back without moving the later calls' receipts, and waiters that
     * give up their turns in the order they took them must get all of them back, not half.
     */
    static final class Transition implements PackedTransition {

        private static final int TAT_BITS = 51;

        private static final long TAT_MASK = (1L << TAT_BITS) - 1;

        private static final long HALF_RANGE = 1L << (TAT_BITS - 1);

        /** How far ahead a converted score may run: the horizon every store reads times within. */
        static final long MAX_AHEAD_MICROS = (1L << 39) * 1000;

        private final Rates rates;

        private final int limit;

        /** The emission interval, in microseconds. */
        private final long interval;

        /** The tolerance, in microseconds. */
        private final long tolerance;

        /** The interval's id, in the bits above the TAT. */
        private final long rateBits;

        Transition(GcraPolicy policy, Rates rates) {
            this.rates = rates;
            this.limit = policy.limit();
            this.interval = policy.emissionIntervalMicros();
            this.tolerance = policy.toleranceMicros();
            this.rateBits = (long) rates.id(this.interval) << TAT_BITS;
        }

        private long pack(long tat) {
            return this.rateBits | (tat & TAT_MASK);
        }

        private static long tat(long state, long nowMicros) {
            long ahead = ((state & TAT_MASK) - nowMicros) & TAT_MASK;
            return nowMicros + ((ahead >= HALF_RANGE) ? ahead - (1L << TAT_BITS) : ahead);
        }

        /** How far the key's score runs ahead of now under this interval, 0 when it does not. */
        private long ahead(long state, long nowMicros) {
            if (state == EMPTY) {
                return 0;
            }
            long ahead = tat(state, nowMicros) - nowMicros;
            if (ahead <= 0) {
                return 0;
            }
            long written = this.rates.rate((int) (state >>> TAT_BITS));
            return (written == this.interval) ? ahead : convert(ahead, written, this.interval);
        }

        /**
         * What runs {@code ahead} under interval {@code from} is under interval {@code to}: the same
         * number of calls, rounded up, at most {@link #MAX_AHEAD_MICROS}. In doubles, as every twin computes it.
         */
        static long convert(long ahead, long from, long to) {
            return (long) Math.min(Math.ceil((double) ahead * to / from), MAX_AHEAD_MICROS);
        }

        @Override
        public long acquire(long state, long now, int cost) {
            long nowMicros = now * 1000;
            long trial = ahead(state, nowMicros) + cost * this.interval;
            return (trial > this.tolerance) ? REJECTED : pack(nowMicros + trial);
        }

        /**
         * A reservation moves the score forward as an allowed call does: the call's turn is when its
         * trial score is back within the tolerance, {@code trial - n * I} after now, and it is let in
         * when that is at most {@code maxWaitMillis} away. Every later call is decided after it.
         */
        @Override
        public long reserve(long state, long now, int cost, long maxWaitMillis) {
            long nowMicros = now * 1000;
            long trial = ahead(state, nowMicros) + cost * this.interval;
            return (trial - this.tolerance > maxWaitMillis * 1000) ? REJECTED : pack(nowMicros + trial);
        }

        /**
         * A charge after the call moves the score forward by its units whatever the tolerance: beyond
         * it by at most {@code maxDebt} intervals, which every later call waits for.
         */
        @Override
        public long charge(long state, long now, int units, int maxDebt) {
            long nowMicros = now * 1000;
            long ahead = ahead(state, nowMicros);
            // in longs that cannot overflow, what the Lua twin computes in doubles
            long most = Math.min(
                    this.tolerance + Math.min(maxDebt, MAX_AHEAD_MICROS / this.interval) * this.interval,
                    MAX_AHEAD_MICROS);
            long room = most - ahead;
            if (room <= 0) {
                return state;
            }
            return pack(nowMicros + ahead + Math.min(room, Math.min(units, room / this.interval + 1) * this.interval));
        }

        /** Whole intervals (rounded up) the score runs beyond the tolerance. */
        @Override
        public int debt(long state, long now) {
            long beyond = ahead(state, now * 1000) - this.tolerance;
            return (beyond <= 0) ? 0 : (int) Math.min(Integer.MAX_VALUE, ceilDiv(beyond, this.interval));
        }

        @Override
        public Decision reserved(long next, long now) {
            long nowMicros = now * 1000;
            long tat = tat(next, nowMicros);
            long ahead = tat - nowMicros;
            if (ahead <= this.tolerance) {
                return allowed(next, now);
            }
            return Decision.reserved(
                    this.limit,
                    0,
                    ceilDiv(ahead, 1000),
                    untilNextUnit(ahead),
                    Math.max(1, tat),
                    ceilDiv(ahead - this.tolerance, 1000));
        }

        @Override
        public Decision allowed(long next, long now) {
            long nowMicros = now * 1000;
            long tat = tat(next, nowMicros);
            long ahead = tat - nowMicros;
            return Decision.allow(
                    this.limit, remaining(ahead), ceilDiv(ahead, 1000), untilNextUnit(ahead), Math.max(1, tat));
        }

        @Override
        public Decision rejected(long state, long now, int cost) {
            long ahead = ahead(state, now * 1000);
            long retryMicros = ahead + cost * this.interval - this.tolerance;
            return Decision.reject(this.limit, remaining(ahead), ceilDiv(retryMicros, 1000), ceilDiv(ahead, 1000));
        }

        @Override
        public Decision peek(long state, long now) {
            long ahead = ahead(state, now * 1000);
            if (ahead + this.interval <= this.tolerance) {
                return Decision.allow(this.limit, remaining(ahead), ceilDiv(ahead, 1000), untilNextUnit(ahead), 0);
            }
            return rejected(state, now, 1);
        }

        /** Whole intervals left within the tolerance; none when the score runs beyond it. */
        private int remaining(long aheadMicros) {
            return (int) Math.max(0, (this.tolerance - aheadMicros) / this.interval);
        }

        /** Milliseconds until one interval more than {@link #remaining} fits; 0 when nothing is in use. */
        private long untilNextUnit(long aheadMicros) {
            int remaining = remaining(aheadMicros);
            if (remaining >= this.limit) {
                return 0;
            }
            return ceilDiv(aheadMicros + (remaining + 1) * this.interval - this.tolerance, 1000);
        }

        @Override
        public long refund(long state, long now, int cost) {
            long nowMicros = now * 1000;
            long back = ahead(state, nowMicros) - cost * this.interval;
            return (back <= 0) ? EMPTY : pack(nowMicros + back);
        }

        @Override
        public long refund(long state, long now, int cost, long receipt) {
            long nowMicros = now * 1000;
            long ahead = ahead(state, nowMicros);
            if (ahead <= 0) {
                return state;
            }
            long tat = nowMicros + ahead;
            long stillAhead = Math.min(receipt - Math.max(receipt - cost * this.interval, nowMicros), ahead);
            if (stillAhead <= 0) {
                return state;
            }
            long back = tat - stillAhead;
            return (back <= nowMicros) ? EMPTY : pack(back);
        }

        private static long ceilDiv(long dividend, long divisor) {
            return (dividend + divisor - 1) / divisor;
        }
    }
}
