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
     */
    static final class Transition extends StampedTransition {

        private final int limit;

        Transition(FixedWindowPolicy policy) {
            super(policy.window().toMillis());
            this.limit = policy.limit();
        }

        /** Units left in a window; none when it holds more than the limit (state of a larger limit). */
        private int remaining(long window) {
            return Math.max(0, this.limit - count(window));
        }

        @Override
        public long acquire(long state, long now, int cost) {
            long current = current(state, now);
            int count = (current == EMPTY) ? 0 : count(current);
            long start = (current == EMPTY) ? now : time(current, now);
            return (count + cost > this.limit) ? REJECTED : pack(count + cost, start);
        }

        @Override
        public Decision allowed(long next, long now) {
            long start = time(next, now);
            long untilEnd = start + this.spanMillis - now;
            return Decision.allow(this.limit, remaining(next), untilEnd, untilEnd, Math.max(1, start));
        }

        @Override
        public Decision rejected(long state, long now, int cost) {
            long current = current(state, now);
            long untilEnd = time(current, now) + this.spanMillis - now;
            return Decision.reject(this.limit, remaining(current), untilEnd, untilEnd);
        }

        @Override
        public Decision peek(long state, long now) {
            long current = current(state, now);
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
            long current = current(state, now);
            if (current == EMPTY || count(current) <= cost) {
                return EMPTY;
            }
            return pack(count(current) - cost, time(current, now));
        }
    }
}
