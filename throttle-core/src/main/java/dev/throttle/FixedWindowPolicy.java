package dev.throttle;

import static dev.throttle.PackedTransition.count;
import static dev.throttle.PackedTransition.pack;
import static dev.throttle.PackedTransition.time;

import java.time.Duration;
import java.util.List;

/**
 * Fixed window: at most {@code limit} units per window; a window starts at the key's first call
 * after the previous window ended.
 *
 * @param name the policy's name
 * @param limit units allowed per window
 * @param window the window's length
 */
public record FixedWindowPolicy(String name, int limit, Duration window) implements Policy {

    /** The {@code fixed-window} algorithm. */
    public static final Algorithm<FixedWindowPolicy> ALGORITHM = new Descriptor();

    public FixedWindowPolicy {
        Checks.name(name);
        Checks.quantity(name, "limit", limit);
        Checks.duration(name, "window", window);
    }

    @Override
    public Algorithm<FixedWindowPolicy> algorithm() {
        return ALGORITHM;
    }

    @Override
    public int quota() {
        return this.limit;
    }

    @Override
    public int maxCost() {
        return this.limit;
    }

    @Override
    public Duration idleExpiry() {
        return this.window;
    }

    /**
     * The {@code fixed-window} algorithm: its parameters, its numbers and its transition.
     */
    public static final class Descriptor extends PackedAlgorithm<FixedWindowPolicy> {

        /** Creates the algorithm: use {@link FixedWindowPolicy#ALGORITHM}. */
        public Descriptor() {
            super("fixed-window", FixedWindowPolicy.class, "limit", "window");
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
        protected FixedWindowPolicy build(String name, Settings settings) {
            return new FixedWindowPolicy(
                    name, settings.required("limit", Integer.class), settings.required("window", Duration.class));
        }

        @Override
        protected List<Object> values(FixedWindowPolicy policy) {
            return List.of(policy.limit(), policy.window());
        }

        @Override
        protected long[] numbers(FixedWindowPolicy policy) {
            return new long[] {policy.limit(), policy.window().toMillis()};
        }

        @Override
        protected PackedTransition transition(FixedWindowPolicy policy, Rates rates) {
            return new Transition(policy);
        }
    }

    /**
     * Over packed (count, windowStart). A window starts at the key's first call after the previous
     * window ended ({@code now >= start + window}); a call passes while {@code count + cost <= limit}.
     * A window that starts after now (the clock stepped back) is still the current one. The next unit
     * comes when the window ends.
     *
     * <p>Receipt: the start of the window the call counted in. Windows start at least a window apart,
     * so it names one window; a refund gives the call's units back to that window while it is open,
     * and nothing once it has ended.
     *
     * <p>Reservations (a call that may wait for its turn): a call that does not fit the current window
     * is let into the next one, which starts exactly when the current one ends, when that is within
     * its wait; only the current and the next window take calls, never one after. The state is then
     * the current window's start with the next window's count, marked by the sign bit ({@link #NEXT}):
     * the current window counts as full (what it had left when the first call went to the next one is
     * not handed out any more), every call that does not wait is refused until it ends, and when it
     * ends the next window is the current one, with its count. A reservation's receipt is the next
     * window's start, the receipt its calls have once that window is the current one. A refund of a
     * call of the full current window gives nothing back while the next one holds reservations.
     * States without the mark are read as before, so a key nobody waits on is decided as always.
     */
    static final class Transition extends StampedTransition {

        /** The mark of a state whose current window is full and whose count is the next window's. */
        private static final long NEXT = Long.MIN_VALUE;

        private final int limit;

        Transition(FixedWindowPolicy policy) {
            super(policy.window().toMillis());
            this.limit = policy.limit();
        }

        /** Whether a state holds reservations for the next window ({@link #EMPTY} and {@link #REJECTED} do not). */
        private static boolean next(long state) {
            return state < 0 && state > REJECTED;
        }

        /**
         * The state as of now: a marked state whose current window has ended is its next window,
         * opened; any other state as it is (one comparison for an unmarked state).
         */
        private long open(long state, long now) {
            if (!next(state)) {
                return state;
            }
            long start = time(state, now);
            return (now - start < this.spanMillis) ? state : pack(count(state & ~NEXT), start + this.spanMillis);
        }

        /** Units left in a window; none when it holds more than the limit (state of a larger limit). */
        private int remaining(long window) {
            return Math.max(0, this.limit - count(window));
        }

        @Override
        public long acquire(long state, long now, int cost) {
            long open = open(state, now);
            if (next(open)) {
                // the current window is full, and callers wait for the next
                return REJECTED;
            }
            long current = current(open, now);
            int count = (current == EMPTY) ? 0 : count(current);
            long start = (current == EMPTY) ? now : time(current, now);
            return (count + cost > this.limit) ? REJECTED : pack(count + cost, start);
        }

        @Override
        public long reserve(long state, long now, int cost, long maxWaitMillis) {
            long open = open(state, now);
            if (next(open)) {
                long start = time(open, now);
                int next = count(open & ~NEXT);
                return (next + cost > this.limit || start + this.spanMillis - now > maxWaitMillis)
                        ? REJECTED
                        : pack(next + cost, start) | NEXT;
            }
            long current = current(open, now);
            int count = (current == EMPTY) ? 0 : count(current);
            long start = (current == EMPTY) ? now : time(current, now);
            if (count + cost <= this.limit) {
                return pack(count + cost, start);
            }
            return (start + this.spanMillis - now > maxWaitMillis) ? REJECTED : pack(cost, start) | NEXT;
        }

        /**
         * A charge after the call counts its units in the current window; what does not fit there is
         * carried into the next window, as reservations are (the current one counts as full), at most
         * {@code maxDebt} units and at most the next window's limit: a debt is paid by the next
         * window, never by the ones after it.
         */
        @Override
        public long charge(long state, long now, int units, int maxDebt) {
            long open = open(state, now);
            int most = Math.min(maxDebt, this.limit);
            if (next(open)) {
                int carried = count(open & ~NEXT);
                long more = Math.max(carried, Math.min((long) carried + units, most));
                return (more == carried) ? state : pack(more, open & PackedBits.TIME_MASK) | NEXT;
            }
            long current = current(open, now);
            int count = (current == EMPTY) ? 0 : count(current);
            long start = (current == EMPTY) ? now : time(current, now);
            long total = (long) count + units;
            if (total <= this.limit) {
                return pack(total, start);
            }
            long carry = Math.min(total - Math.max(count, this.limit), most);
            return (carry <= 0) ? pack(Math.max(count, this.limit), start) : pack(carry, start) | NEXT;
        }

        /** The units carried into the next window. */
        @Override
        public int debt(long state, long now) {
            long open = open(state, now);
            return next(open) ? count(open & ~NEXT) : 0;
        }

        @Override
        public Decision reserved(long next, long now) {
            if (!next(next)) {
                return allowed(next, now);
            }
            long nextStart = time(next, now) + this.spanMillis;
            long untilNext = nextStart - now;
            return Decision.reserved(
                    this.limit,
                    0,
                    untilNext + this.spanMillis,
                    (count(next & ~NEXT) < this.limit) ? untilNext : untilNext + this.spanMillis,
                    Math.max(1, nextStart),
                    untilNext);
        }

        @Override
        public Decision allowed(long next, long now) {
            long start = time(next, now);
            long untilEnd = start + this.spanMillis - now;
            return Decision.allow(this.limit, remaining(next), untilEnd, untilEnd, Math.max(1, start));
        }

        @Override
        public Decision rejected(long state, long now, int cost) {
            long open = open(state, now);
            if (next(open)) {
                long untilNext = time(open, now) + this.spanMillis - now;
                long untilAfter = untilNext + this.spanMillis;
                return Decision.reject(
                        this.limit, 0, (count(open & ~NEXT) + cost <= this.limit) ? untilNext : untilAfter, untilAfter);
            }
            long current = current(open, now);
            long untilEnd = time(current, now) + this.spanMillis - now;
            return Decision.reject(this.limit, remaining(current), untilEnd, untilEnd);
        }

        @Override
        public Decision peek(long state, long now) {
            long open = open(state, now);
            if (next(open)) {
                return rejected(open, now, 1);
            }
            long current = current(open, now);
            if (current == EMPTY) {
                return Decision.allow(this.limit, this.limit, 0);
            }
            if (count(current) < this.limit) {
                long untilEnd = time(current, now) + this.spanMillis - now;
                return Decision.allow(this.limit, remaining(current), untilEnd, untilEnd, 0);
            }
            return rejected(state, now, 1);
        }

        @Override
        public long refund(long state, long now, int cost) {
            long open = open(state, now);
            if (next(open)) {
                return giveBackNext(open, cost);
            }
            long current = current(open, now);
            if (current == EMPTY || count(current) <= cost) {
                return EMPTY;
            }
            return pack(count(current) - cost, time(current, now));
        }

        /**
         * A reservation in the next window, by its receipt (that window's start), gives its units back
         * to that window; a call of the full current window, nothing while the next one holds reservations.
         */
        @Override
        public long refund(long state, long now, int cost, long receipt) {
            long open = open(state, now);
            if (!next(open)) {
                return super.refund(open, now, cost, receipt);
            }
            return (Math.max(1, time(open, now) + this.spanMillis) == receipt) ? giveBackNext(open, cost) : state;
        }

        /** The next window gives back {@code cost} units; without reservations left, the current window stays full. */
        private long giveBackNext(long open, int cost) {
            int left = count(open & ~NEXT) - cost;
            return (left <= 0)
                    ? pack(this.limit, open & PackedBits.TIME_MASK)
                    : pack(left, open & PackedBits.TIME_MASK) | NEXT;
        }
    }
}
