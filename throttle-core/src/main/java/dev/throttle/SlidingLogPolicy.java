package dev.throttle;

import java.time.Duration;
import java.util.List;

/**
 * Sliding log with a growing delay (metabase/throttle's {@code check}): the attempts of the last
 * {@code ttl} are kept; with {@code c} of them, {@code over = c + 1 - threshold}; when
 * {@code over > 0} the call must come at least {@code initialDelay * over^delayExponent} after the
 * most recent attempt. A refused call is not recorded.
 *
 * <p>Delays are rounded to whole milliseconds once, here ({@link #delaysMillis()}), and both stores
 * use that table, so floating point never decides differently in one store's twin than in another's.
 *
 * @param name the policy's name
 * @param threshold attempts allowed within {@code ttl} before delays apply
 * @param ttl how long an attempt is remembered
 * @param initialDelay the delay once the threshold is passed
 * @param delayExponent how fast the delay grows with each attempt over the threshold
 */
public record SlidingLogPolicy(String name, int threshold, Duration ttl, Duration initialDelay, double delayExponent)
        implements Policy {

    /** Default {@code threshold}. */
    public static final int DEFAULT_THRESHOLD = 10;

    /** Default {@code ttl}. */
    public static final Duration DEFAULT_TTL = Duration.ofHours(1);

    /** Default {@code initial-delay}. */
    public static final Duration DEFAULT_INITIAL_DELAY = Duration.ofSeconds(15);

    /** Default {@code delay-exponent}. */
    public static final double DEFAULT_DELAY_EXPONENT = 1.5;

    /** Most attempts one key's log may need to hold; a policy that needs more is refused. */
    public static final int MAX_ENTRIES = 1000;

    /** The {@code sliding-log} algorithm. */
    public static final Algorithm<SlidingLogPolicy> ALGORITHM = new Descriptor();

    public SlidingLogPolicy {
        Checks.name(name);
        Checks.quantity(name, "threshold", threshold);
        Checks.duration(name, "ttl", ttl);
        Checks.duration(name, "initial-delay", initialDelay);
        if (!(delayExponent >= 0 && delayExponent <= 10)) {
            throw new InvalidPolicyException(name, "delay-exponent", "must be between 0 and 10, was " + delayExponent);
        }
        if (threshold > MAX_ENTRIES) {
            throw new InvalidPolicyException(
                    name, "threshold", "must be at most " + MAX_ENTRIES + ", was " + threshold);
        }
        int mostDelays = MAX_ENTRIES + 1 - threshold;
        if (delayCount(ttl, initialDelay, delayExponent, mostDelays) > mostDelays) {
            throw new InvalidPolicyException(
                    name,
                    "initial-delay",
                    "is too short: the log would have to keep more than "
                            + MAX_ENTRIES + " attempts per key within ttl " + Checks.format(ttl)
                            + "; raise initial-delay or delay-exponent, or lower ttl or threshold");
        }
    }

    /**
     * A policy with metabase's defaults: threshold 10, ttl 1h, initial delay 15s, exponent 1.5.
     * @param name the policy's name
     * @return the policy
     */
    public static SlidingLogPolicy withDefaults(String name) {
        return new SlidingLogPolicy(
                name, DEFAULT_THRESHOLD, DEFAULT_TTL, DEFAULT_INITIAL_DELAY, DEFAULT_DELAY_EXPONENT);
    }

    private static long delay(long initialDelayMillis, double exponent, int over) {
        double millis = initialDelayMillis * Math.pow(over, exponent);
        return (long) Math.min(Math.round(millis), Checks.MAX_MILLIS);
    }

    /** How many delays it takes to wait out {@code ttl}; {@code most + 1} when it takes more than {@code most}. */
    private static int delayCount(Duration ttl, Duration initialDelay, double exponent, int most) {
        int count = 0;
        long waited = 0;
        while (waited < ttl.toMillis() && count <= most) {
            count++;
            waited += delay(initialDelay.toMillis(), exponent, count);
        }
        return count;
    }

    /**
     * Returns the required delay after the most recent attempt, for {@code over} = 1, 2, ...
     * up to the largest {@code over} a key's log can reach; element {@code i} is for
     * {@code over = i + 1}. Computed on each call: stores read it once when they bind the policy.
     * @return delays in milliseconds, rounded to the nearest millisecond
     */
    long[] delaysMillis() {
        int count = delayCount(this.ttl, this.initialDelay, this.delayExponent, MAX_ENTRIES);
        long[] delays = new long[count];
        for (int i = 0; i < count; i++) {
            delays[i] = delay(this.initialDelay.toMillis(), this.delayExponent, i + 1);
        }
        return delays;
    }

    /**
     * Returns the most attempts a key's log ever needs to hold to decide: {@code threshold} free
     * attempts plus those the delays let in within one {@code ttl}.
     * @return the bound on the log's length
     */
    int maxEntries() {
        return this.threshold + delaysMillis().length - 1;
    }

    @Override
    public Algorithm<SlidingLogPolicy> algorithm() {
        return ALGORITHM;
    }

    @Override
    public int quota() {
        return this.threshold;
    }

    @Override
    public Duration window() {
        return this.ttl;
    }

    /**
     * Always 1: the log counts attempts.
     */
    @Override
    public int maxCost() {
        return 1;
    }

    @Override
    public Duration idleExpiry() {
        return this.ttl;
    }

    /**
     * The {@code sliding-log} algorithm: its parameters, its numbers and its transition.
     */
    public static final class Descriptor extends Algorithm<SlidingLogPolicy> {

        /** Creates the algorithm: use {@link SlidingLogPolicy#ALGORITHM}. */
        public Descriptor() {
            super("sliding-log", SlidingLogPolicy.class, "threshold", "ttl", "initial-delay", "delay-exponent");
        }

        /** A sliding log's delays are its protection, as a lockout's are. */
        @Override
        public String whyNoWait() {
            return "its delays grow with every attempt to slow a guesser, and a delay that can be waited out"
                    + " protects nothing (as a lockout that can be waited out protects nothing)";
        }

        @Override
        protected SlidingLogPolicy build(String name, Settings settings) {
            return new SlidingLogPolicy(
                    name,
                    settings.get("threshold", Integer.class, DEFAULT_THRESHOLD),
                    settings.get("ttl", Duration.class, DEFAULT_TTL),
                    settings.get("initial-delay", Duration.class, DEFAULT_INITIAL_DELAY),
                    settings.get("delay-exponent", Double.class, DEFAULT_DELAY_EXPONENT));
        }

        @Override
        protected List<Object> values(SlidingLogPolicy policy) {
            return List.of(policy.threshold(), policy.ttl(), policy.initialDelay(), policy.delayExponent());
        }

        @Override
        protected long[] numbers(SlidingLogPolicy policy) {
            long[] delays = policy.delaysMillis();
            long[] numbers = new long[3 + delays.length];
            numbers[0] = policy.threshold();
            numbers[1] = policy.ttl().toMillis();
            numbers[2] = policy.maxEntries();
            System.arraycopy(delays, 0, numbers, 3, delays.length);
            return numbers;
        }

        @Override
        protected ArrayTransition transition(SlidingLogPolicy policy, Rates rates) {
            return new SlidingLogTransition(policy);
        }
    }
}
