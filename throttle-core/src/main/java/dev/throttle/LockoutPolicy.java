package dev.throttle;

import static dev.throttle.PackedTransition.count;
import static dev.throttle.PackedTransition.pack;
import static dev.throttle.PackedTransition.time;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * Escalating lockout (Lucia's throttler): a key's first attempt passes; each later one must come at
 * least {@code timeouts[i]} after the previous allowed one, where {@code i} climbs by one per
 * allowed attempt up to the last entry and stays there. Unlike the original, state that has been
 * idle for {@code expireAfter} is forgotten, so memory stays bounded. Pair it with
 * reset-on-success for logins.
 *
 * @param name the policy's name
 * @param timeouts the ladder of waits
 * @param expireAfter how long after the last allowed attempt the key starts over; at least the
 * longest timeout
 */
public record LockoutPolicy(String name, List<Duration> timeouts, Duration expireAfter) implements Policy {

    /** Default {@code expire-after}, or the longest timeout when that is longer. */
    public static final Duration DEFAULT_EXPIRE_AFTER = Duration.ofHours(1);

    /** Most rungs a ladder may have. */
    public static final int MAX_TIMEOUTS = 100;

    /** The {@code lockout} algorithm. */
    public static final Algorithm<LockoutPolicy> ALGORITHM = new Descriptor();

    public LockoutPolicy {
        Checks.name(name);
        if (timeouts == null) {
            throw new InvalidPolicyException(name, "timeouts", "is required");
        }
        if (timeouts.isEmpty()) {
            throw new InvalidPolicyException(name, "timeouts", "must list at least one duration");
        }
        if (timeouts.size() > MAX_TIMEOUTS) {
            throw new InvalidPolicyException(
                    name, "timeouts", "must list at most " + MAX_TIMEOUTS + " durations, was " + timeouts.size());
        }
        for (int i = 0; i < timeouts.size(); i++) {
            if (timeouts.get(i) == null) {
                throw new InvalidPolicyException(name, "timeouts[" + i + "]", "is empty");
            }
            Checks.duration(name, "timeouts[" + i + "]", timeouts.get(i));
        }
        timeouts = List.copyOf(timeouts);
        Checks.duration(name, "expire-after", expireAfter);
        Duration longest = longest(timeouts);
        if (expireAfter.compareTo(longest) < 0) {
            throw new InvalidPolicyException(
                    name,
                    "expire-after",
                    "must be at least the longest timeout ("
                            + Checks.format(longest) + "), was " + Checks.format(expireAfter)
                            + "; otherwise a locked-out key would be forgotten mid-lockout");
        }
    }

    /**
     * A ladder that forgets idle keys after {@link #DEFAULT_EXPIRE_AFTER} (or the longest timeout,
     * when that is longer).
     * @param name the policy's name
     * @param timeouts the ladder of waits
     * @return the policy
     */
    public static LockoutPolicy of(String name, List<Duration> timeouts) {
        Duration longest = (timeouts != null) ? longest(timeouts) : Duration.ZERO;
        return new LockoutPolicy(
                name, timeouts, (longest.compareTo(DEFAULT_EXPIRE_AFTER) > 0) ? longest : DEFAULT_EXPIRE_AFTER);
    }

    private static Duration longest(List<Duration> timeouts) {
        return timeouts.stream()
                .filter(Objects::nonNull)
                .max(Duration::compareTo)
                .orElse(Duration.ZERO);
    }

    /** The timeouts in milliseconds, for the transition and its numbers: a new array. */
    long[] timeoutsMillis() {
        return this.timeouts.stream().mapToLong(Duration::toMillis).toArray();
    }

    @Override
    public Algorithm<LockoutPolicy> algorithm() {
        return ALGORITHM;
    }

    /**
     * Always 1: one attempt, then a wait.
     */
    @Override
    public int quota() {
        return 1;
    }

    @Override
    public Duration window() {
        return this.expireAfter;
    }

    @Override
    public int maxCost() {
        return 1;
    }

    @Override
    public Duration idleExpiry() {
        return this.expireAfter;
    }

    /**
     * The {@code lockout} algorithm: its parameters, its numbers and its transition.
     */
    public static final class Descriptor extends Algorithm<LockoutPolicy> {

        /** Creates the algorithm: use {@link LockoutPolicy#ALGORITHM}. */
        public Descriptor() {
            super("lockout", LockoutPolicy.class, "timeouts", "expire-after");
        }

        /** A lockout's waits are its protection. */
        @Override
        public String whyNoWait() {
            return "a lockout that can be waited out protects nothing: its growing waits are what slows a guesser,"
                    + " and a caller that waits them out guesses as fast as the lockout lets anyone";
        }

        @Override
        @SuppressWarnings("unchecked")
        protected LockoutPolicy build(String name, Settings settings) {
            List<Duration> timeouts = settings.required("timeouts", List.class);
            Duration expireAfter = settings.get("expire-after", Duration.class);
            return (expireAfter != null) ? new LockoutPolicy(name, timeouts, expireAfter) : of(name, timeouts);
        }

        @Override
        protected List<Object> values(LockoutPolicy policy) {
            return List.of(policy.timeouts(), policy.expireAfter());
        }

        @Override
        protected long[] numbers(LockoutPolicy policy) {
            long[] timeouts = policy.timeoutsMillis();
            long[] numbers = new long[1 + timeouts.length];
            numbers[0] = policy.expireAfter().toMillis();
            System.arraycopy(timeouts, 0, numbers, 1, timeouts.length);
            return numbers;
        }

        @Override
        protected PackedTransition transition(LockoutPolicy policy, Rates rates) {
            return new Transition(policy);
        }
    }

    /**
     * Over packed (index, lastAllowed). The first attempt passes and stores (0, now); an attempt
     * passes when {@code now - lastAllowed >= timeouts[index]} and stores
     * (min(index + 1, last rung), now). A refusal writes nothing. State idle for {@code expireAfter}
     * counts as never used; a {@code lastAllowed} after now (the clock stepped back) is kept, so the
     * wait runs from it. An allowed attempt's next unit is its rung's timeout away. A refund steps back
     * one rung: (i, t) becomes (i - 1, t - timeouts[i - 1]), which lets the next attempt through at
     * once, as the refunded call's predecessor state did.
     *
     * <p>Receipt: the attempt's time, its {@code lastAllowed}. A refund steps back only while the
     * attempt is still the last allowed one; after a later attempt, or once the state expired or was
     * reset, it gives back nothing.
     */
    static final class Transition extends StampedTransition {

        private final long[] timeouts;

        Transition(LockoutPolicy policy) {
            super(policy.expireAfter().toMillis());
            this.timeouts = policy.timeoutsMillis();
        }

        /** The rung of a state; one written under a longer ladder stands on this ladder's top rung. */
        private int index(long current) {
            return Math.min(count(current), this.timeouts.length - 1);
        }

        @Override
        public long acquire(long state, long now, int cost) {
            long current = current(state, now);
            if (current == EMPTY) {
                return pack(0, now);
            }
            int index = index(current);
            if (now - time(current, now) < this.timeouts[index]) {
                return REJECTED;
            }
            return pack(Math.min(index + 1, this.timeouts.length - 1), now);
        }

        @Override
        public Decision allowed(long next, long now) {
            long lastAllowed = time(next, now);
            return Decision.allow(
                    1,
                    0,
                    lastAllowed + this.spanMillis - now,
                    lastAllowed + this.timeouts[index(next)] - now,
                    Math.max(1, lastAllowed));
        }

        @Override
        public Decision rejected(long state, long now, int cost) {
            long current = current(state, now);
            long lastAllowed = time(current, now);
            return Decision.reject(
                    1, 0, lastAllowed + this.timeouts[index(current)] - now, lastAllowed + this.spanMillis - now);
        }

        @Override
        public Decision peek(long state, long now) {
            long current = current(state, now);
            if (current == EMPTY) {
                return Decision.allow(1, 1, 0);
            }
            if (now - time(current, now) >= this.timeouts[index(current)]) {
                return Decision.allow(1, 1, time(current, now) + this.spanMillis - now);
            }
            return rejected(state, now, 1);
        }

        @Override
        public long refund(long state, long now, int cost) {
            long current = current(state, now);
            if (current == EMPTY || index(current) == 0) {
                return EMPTY;
            }
            int previous = index(current) - 1;
            return pack(previous, time(current, now) - this.timeouts[previous]);
        }
    }
}
