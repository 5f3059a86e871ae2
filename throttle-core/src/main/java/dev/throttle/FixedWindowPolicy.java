package dev.throttle;

import static dev.throttle.PackedTransition.count;
import static dev.throttle.PackedTransition.pack;
import static dev.throttle.PackedTransition.time;

import java.time.DateTimeException;
import java.time.Duration;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Fixed window: at most {@code limit} units per window; a window starts at the key's first call
 * after the previous window ended, or, for a window of the calendar ({@link #calendar()}: a day, a
 * week or a month in a time zone), at the calendar's boundaries.
 *
 * @param name the policy's name
 * @param limit units allowed per window
 * @param window the window's length; for a calendar window, the unit's longest (25 hours, 7 days
 * and an hour, 31 days and an hour), which is also what {@code RateLimit-Policy} advertises, whatever
 * length is given
 * @param calendar the calendar window, or null for a window of {@code window} from the key's first call
 */
public record FixedWindowPolicy(
        String name, int limit, Duration window, @Nullable CalendarWindow calendar) implements Policy {

    /** The {@code fixed-window} algorithm. */
    public static final Algorithm<FixedWindowPolicy> ALGORITHM = new Descriptor();

    public FixedWindowPolicy {
        Checks.name(name);
        Checks.quantity(name, "limit", limit);
        if (calendar != null) {
            window = calendar.unit().longest();
        }
        Checks.duration(name, "window", window);
    }

    /**
     * A window of {@code window} from the key's first call after the previous window ended.
     * @param name the policy's name
     * @param limit units allowed per window
     * @param window the window's length
     */
    public FixedWindowPolicy(String name, int limit, Duration window) {
        this(name, limit, window, null);
    }

    /**
     * A window of the calendar: a day, an ISO week or a month in a zone, from its boundaries.
     * @param name the policy's name
     * @param limit units allowed per window
     * @param calendar the calendar window
     * @return the policy
     */
    public static FixedWindowPolicy calendar(String name, int limit, CalendarWindow calendar) {
        return new FixedWindowPolicy(name, limit, calendar.unit().longest(), calendar);
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
     * Returns the boundaries of the windows around an instant, for a store whose own twin of the
     * transition cannot read the calendar (the Redis store's script, which cannot know a zone's
     * rules): the starts of the two windows before the one holding {@code epochMillis}, of that
     * window, and of the three after it. A twin that decides at another clock's time (the Redis
     * server's) picks the window holding its own time among them: any clock within a window of
     * {@code epochMillis} finds it there.
     * @param epochMillis the instant, usually this process's time
     * @return six boundaries, ascending; empty for a window that does not follow the calendar
     */
    public long[] boundaries(long epochMillis) {
        CalendarWindow calendar = this.calendar;
        if (calendar == null) {
            return new long[0];
        }
        long[] boundaries = new long[6];
        boundaries[2] = calendar.startOf(epochMillis);
        boundaries[1] = calendar.startOf(boundaries[2] - 1);
        boundaries[0] = calendar.startOf(boundaries[1] - 1);
        for (int i = 3; i < boundaries.length; i++) {
            boundaries[i] = calendar.endOf(boundaries[i - 1]);
        }
        return boundaries;
    }

    /**
     * The {@code fixed-window} algorithm: its parameters, its numbers and its transition.
     */
    public static final class Descriptor extends PackedAlgorithm<FixedWindowPolicy> {

        /** Creates the algorithm: use {@link FixedWindowPolicy#ALGORITHM}. */
        public Descriptor() {
            super("fixed-window", FixedWindowPolicy.class, "limit", "window", "zone", "anchor-day");
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

        /**
         * The window is a duration, or a calendar window written {@code 1d}, {@code 1w} or
         * {@code 1M} (a {@link CalendarWindow.Unit} or its text); only a calendar window takes a
         * {@code zone} (a {@link ZoneId} or its id, UTC by default) and only a month an
         * {@code anchor-day}.
         */
        @Override
        protected FixedWindowPolicy build(String name, Settings settings) {
            int limit = settings.required("limit", Integer.class);
            Object window = settings.required("window", Object.class);
            Object zone = settings.get("zone", Object.class);
            Integer anchorDay = settings.get("anchor-day", Integer.class);
            if (window instanceof Duration duration) {
                if (zone != null || anchorDay != null) {
                    throw new InvalidPolicyException(
                            name,
                            (zone != null) ? "zone" : "anchor-day",
                            "needs a calendar window (window: 1d, 1w or 1M); a window of " + Checks.format(duration)
                                    + " starts at the key's first call");
                }
                return new FixedWindowPolicy(name, limit, duration);
            }
            CalendarWindow.Unit unit = (window instanceof CalendarWindow.Unit u)
                    ? u
                    : (window instanceof String text) ? CalendarWindow.Unit.fromText(text.strip()) : null;
            if (unit == null) {
                throw new InvalidPolicyException(
                        name,
                        "window",
                        "must be a duration (such as 10s or 1h) or a calendar window (1d, 1w or 1M), was '" + window
                                + "'");
            }
            if (anchorDay != null && (unit != CalendarWindow.Unit.MONTH || anchorDay < 1 || anchorDay > 31)) {
                throw new InvalidPolicyException(
                        name,
                        "anchor-day",
                        (unit != CalendarWindow.Unit.MONTH)
                                ? "is for a month window (window: 1M), not " + unit.text()
                                : "must be a day of the month, 1 to 31, was " + anchorDay);
            }
            return calendar(
                    name, limit, new CalendarWindow(unit, zone(name, zone), (anchorDay != null) ? anchorDay : 1));
        }

        /** The zone of a calendar window: UTC unless set. */
        private static ZoneId zone(String name, @Nullable Object zone) {
            if (zone == null) {
                return ZoneId.of("UTC");
            }
            if (zone instanceof ZoneId id) {
                return id;
            }
            try {
                return ZoneId.of(zone.toString().strip());
            } catch (DateTimeException ex) {
                throw new InvalidPolicyException(
                        name, "zone", "must be a time zone such as UTC, Europe/Berlin or +02:00, was '" + zone + "'");
            }
        }

        /** A calendar window's settings are its unit's text, its zone's id and its anchor day (when not the 1st). */
        @Override
        protected List<Object> values(FixedWindowPolicy policy) {
            CalendarWindow calendar = policy.calendar();
            if (calendar == null) {
                return Arrays.asList(policy.limit(), policy.window(), null, null);
            }
            List<Object> values = new ArrayList<>(4);
            values.add(policy.limit());
            values.add(calendar.unit().text());
            values.add(calendar.zone().getId());
            values.add((calendar.anchorDay() != 1) ? calendar.anchorDay() : null);
            return values;
        }

        /**
         * A calendar window's length is 0: its twins are given the windows' boundaries with each call
         * ({@link FixedWindowPolicy#boundaries}).
         */
        @Override
        protected long[] numbers(FixedWindowPolicy policy) {
            return new long[] {
                policy.limit(), (policy.calendar() == null) ? policy.window().toMillis() : 0
            };
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
     *
     * <p>A calendar window ({@link FixedWindowPolicy#calendar()}) starts at the calendar's boundary
     * before the call rather than at the call, and ends at the next boundary ({@link #end}); all else
     * is as above. A window that starts after now (the clock stepped back) still ends at its own
     * next boundary.
     */
    static final class Transition extends StampedTransition {

        /** The mark of a state whose current window is full and whose count is the next window's. */
        private static final long NEXT = Long.MIN_VALUE;

        private final int limit;

        /** The calendar's windows, or null when a window lasts {@link #spanMillis} from its first call. */
        private final @Nullable CalendarSpans calendar;

        Transition(FixedWindowPolicy policy) {
            super(policy.window().toMillis());
            this.limit = policy.limit();
            this.calendar = (policy.calendar() != null) ? new CalendarSpans(policy.calendar()) : null;
        }

        /** The end of the window starting at {@code start}: the next one's start. */
        @Override
        long end(long start) {
            CalendarSpans calendar = this.calendar;
            return (calendar == null) ? start + this.spanMillis : calendar.endOf(start);
        }

        /** The start of a window that a call at {@code now} opens: now, or the calendar's boundary before it. */
        private long startAt(long now) {
            CalendarSpans calendar = this.calendar;
            return (calendar == null) ? now : calendar.startOf(now);
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
            long end = end(time(state, now));
            return (now < end) ? state : pack(count(state & ~NEXT), end);
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
            long start = (current == EMPTY) ? startAt(now) : time(current, now);
            return (count + cost > this.limit) ? REJECTED : pack(count + cost, start);
        }

        @Override
        public long reserve(long state, long now, int cost, long maxWaitMillis) {
            long open = open(state, now);
            if (next(open)) {
                long start = time(open, now);
                int next = count(open & ~NEXT);
                return (next + cost > this.limit || end(start) - now > maxWaitMillis)
                        ? REJECTED
                        : pack(next + cost, start) | NEXT;
            }
            long current = current(open, now);
            int count = (current == EMPTY) ? 0 : count(current);
            long start = (current == EMPTY) ? startAt(now) : time(current, now);
            if (count + cost <= this.limit) {
                return pack(count + cost, start);
            }
            return (end(start) - now > maxWaitMillis) ? REJECTED : pack(cost, start) | NEXT;
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
            long start = (current == EMPTY) ? startAt(now) : time(current, now);
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
            long nextStart = end(time(next, now));
            long untilNext = nextStart - now;
            long untilAfter = end(nextStart) - now;
            return Decision.reserved(
                    this.limit,
                    0,
                    untilAfter,
                    (count(next & ~NEXT) < this.limit) ? untilNext : untilAfter,
                    Math.max(1, nextStart),
                    untilNext);
        }

        @Override
        public Decision allowed(long next, long now) {
            long start = time(next, now);
            long untilEnd = end(start) - now;
            return Decision.allow(this.limit, remaining(next), untilEnd, untilEnd, Math.max(1, start));
        }

        @Override
        public Decision rejected(long state, long now, int cost) {
            long open = open(state, now);
            if (next(open)) {
                long nextStart = end(time(open, now));
                long untilNext = nextStart - now;
                long untilAfter = end(nextStart) - now;
                return Decision.reject(
                        this.limit, 0, (count(open & ~NEXT) + cost <= this.limit) ? untilNext : untilAfter, untilAfter);
            }
            long current = current(open, now);
            long untilEnd = end(time(current, now)) - now;
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
                long untilEnd = end(time(current, now)) - now;
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
            return (Math.max(1, end(time(open, now))) == receipt) ? giveBackNext(open, cost) : state;
        }

        /** The next window gives back {@code cost} units; without reservations left, the current window stays full. */
        private long giveBackNext(long open, int cost) {
            int left = count(open & ~NEXT) - cost;
            return (left <= 0)
                    ? pack(this.limit, open & PackedBits.TIME_MASK)
                    : pack(left, open & PackedBits.TIME_MASK) | NEXT;
        }
    }

    /**
     * The windows of a calendar as a transition reads them: the window around the latest time asked
     * about is kept, so that a decision allocates nothing but when a window ends (the calendar's
     * arithmetic makes dates). Thread-safe: the window kept is immutable, and two threads that find
     * it stale both compute the same one.
     */
    static final class CalendarSpans {

        private final CalendarWindow calendar;

        private volatile Span span;

        CalendarSpans(CalendarWindow calendar) {
            this.calendar = calendar;
            this.span = span(0);
        }

        /** The start of the window holding {@code now}. */
        long startOf(long now) {
            Span span = this.span;
            if (now < span.start || now >= span.end) {
                span = span(now);
                this.span = span;
            }
            return span.start;
        }

        /** The end of the window holding {@code time} (a window's start, usually). */
        long endOf(long time) {
            Span span = this.span;
            if (time >= span.start && time < span.end) {
                return span.end;
            }
            if (time >= span.end && time < span.after) {
                return span.after;
            }
            return this.calendar.endOf(time);
        }

        private Span span(long time) {
            long start = this.calendar.startOf(time);
            long end = this.calendar.endOf(start);
            return new Span(start, end, this.calendar.endOf(end));
        }

        /** A window, and the end of the one after it. */
        private record Span(long start, long end, long after) {}
    }
}
