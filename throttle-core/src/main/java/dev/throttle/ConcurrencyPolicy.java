package dev.throttle;

import java.time.Duration;
import java.util.List;

/**
 * Concurrency: at most {@code limit} calls of one key in progress at once. A call takes a slot when
 * it starts and gives it back when it ends, by the receipt its decision carried
 * ({@link Limiter#refund(String, int, long)}): that slot and no other, once. A slot not given back
 * within {@code lease} frees itself, so that an instance that dies mid-call (or a call that never
 * ends) holds no slot for ever.
 *
 * <p>What a refusal says is a hint, not a promise: no store can know when a call in progress will
 * end. A refusal's {@code retryAfter} (and an allowed call's time until its next unit) is
 * {@link #RETRY_HINT} or, when sooner, the time until the oldest slot's lease runs out, the one time
 * the store does know. The policy has no window: {@link #window()} is zero.
 *
 * @param name the policy's name
 * @param limit calls in progress at once per key
 * @param lease how long a slot is held at most when its call never gives it back
 */
public record ConcurrencyPolicy(String name, int limit, Duration lease) implements Policy {

    /** The most slots one key may have: each live slot is one number of the key's state. */
    public static final int MAX_SLOTS = 1000;

    /** How long a refused call is told to wait at most: a hint, since a slot frees when a call ends. */
    public static final Duration RETRY_HINT = Duration.ofSeconds(1);

    /** The {@code concurrency} algorithm. */
    public static final Algorithm<ConcurrencyPolicy> ALGORITHM = new Descriptor();

    public ConcurrencyPolicy {
        Checks.name(name);
        Checks.quantity(name, "limit", limit);
        Checks.duration(name, "lease", lease);
        if (limit > MAX_SLOTS) {
            throw new InvalidPolicyException(name, "limit", "must be at most " + MAX_SLOTS + ", was " + limit);
        }
    }

    @Override
    public Algorithm<ConcurrencyPolicy> algorithm() {
        return ALGORITHM;
    }

    @Override
    public int quota() {
        return this.limit;
    }

    /**
     * Zero: slots are not granted per window (a header names the slots, {@code q}, and no {@code w}).
     */
    @Override
    public Duration window() {
        return Duration.ZERO;
    }

    /**
     * Always 1: a call takes one slot.
     */
    @Override
    public int maxCost() {
        return 1;
    }

    @Override
    public Duration idleExpiry() {
        return this.lease;
    }

    /**
     * The {@code concurrency} algorithm: its parameters, its numbers and its transition.
     */
    public static final class Descriptor extends Algorithm<ConcurrencyPolicy> {

        /** Creates the algorithm: use {@link ConcurrencyPolicy#ALGORITHM}. */
        public Descriptor() {
            super("concurrency", ConcurrencyPolicy.class, "limit", "lease");
        }

        /**
         * A call may wait for a slot: a slot frees when another call ends, which no store knows in
         * advance, so the call waits for a release rather than reserving a turn.
         */
        @Override
        public boolean takesWait() {
            return true;
        }

        @Override
        boolean waitsForARelease() {
            return true;
        }

        @Override
        protected ConcurrencyPolicy build(String name, Settings settings) {
            return new ConcurrencyPolicy(
                    name, settings.required("limit", Integer.class), settings.required("lease", Duration.class));
        }

        @Override
        protected List<Object> values(ConcurrencyPolicy policy) {
            return List.of(policy.limit(), policy.lease());
        }

        @Override
        protected long[] numbers(ConcurrencyPolicy policy) {
            return new long[] {policy.limit(), policy.lease().toMillis(), RETRY_HINT.toMillis()};
        }

        @Override
        protected ArrayTransition transition(ConcurrencyPolicy policy, Rates rates) {
            return new ConcurrencyTransition(policy);
        }
    }
}
