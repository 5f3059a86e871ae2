package dev.throttle;

import static dev.throttle.PackedTransition.count;
import static dev.throttle.PackedTransition.pack;
import static dev.throttle.PackedTransition.time;

import java.time.Duration;
import java.util.List;

/**
 * Token bucket: a key starts with {@code capacity} tokens; a call takes {@code cost} tokens or is
 * refused; {@code refillTokens} whole tokens come back per elapsed {@code refillPeriod}, never above
 * the capacity.
 *
 * @param name the policy's name
 * @param capacity the most tokens a bucket holds (the burst)
 * @param refillTokens tokens added per period
 * @param refillPeriod how often tokens are added
 */
public record TokenBucketPolicy(String name, int capacity, int refillTokens, Duration refillPeriod) implements Policy {

    /** Default {@code refill-tokens}. */
    public static final int DEFAULT_REFILL_TOKENS = 1;

    /** The {@code token-bucket} algorithm. */
    public static final Algorithm<TokenBucketPolicy> ALGORITHM = new Descriptor();

    public TokenBucketPolicy {
        Checks.name(name);
        Checks.quantity(name, "capacity", capacity);
        Checks.quantity(name, "refill-tokens", refillTokens);
        Checks.duration(name, "refill-period", refillPeriod);
        long periodsToFill = (capacity + (long) refillTokens - 1) / refillTokens;
        if (periodsToFill > Checks.MAX_MILLIS / refillPeriod.toMillis()) {
            throw new InvalidPolicyException(
                    name,
                    "refill-period",
                    "makes an empty bucket take more than 3650d to refill (capacity " + capacity + ", refill-tokens "
                            + refillTokens + ", refill-period " + Checks.format(refillPeriod) + ")");
        }
    }

    /**
     * A bucket refilled {@link #DEFAULT_REFILL_TOKENS one token} per period.
     * @param name the policy's name
     * @param capacity the most tokens a bucket holds
     * @param refillPeriod how often one token is added
     * @return the policy
     */
    public static TokenBucketPolicy of(String name, int capacity, Duration refillPeriod) {
        return new TokenBucketPolicy(name, capacity, DEFAULT_REFILL_TOKENS, refillPeriod);
    }

    @Override
    public Algorithm<TokenBucketPolicy> algorithm() {
        return ALGORITHM;
    }

    @Override
    public int quota() {
        return this.capacity;
    }

    /**
     * The time an empty bucket takes to fill.
     */
    @Override
    public Duration window() {
        return idleExpiry();
    }

    @Override
    public int maxCost() {
        return this.capacity;
    }

    @Override
    public Duration idleExpiry() {
        long periodsToFill = (this.capacity + (long) this.refillTokens - 1) / this.refillTokens;
        return this.refillPeriod.multipliedBy(periodsToFill);
    }

    /**
     * The {@code token-bucket} algorithm: its parameters, its numbers and its transition.
     */
    public static final class Descriptor extends PackedAlgorithm<TokenBucketPolicy> {

        /** Creates the algorithm: use {@link TokenBucketPolicy#ALGORITHM}. */
        public Descriptor() {
            super("token-bucket", TokenBucketPolicy.class, "capacity", "refill-tokens", "refill-period");
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
        protected TokenBucketPolicy build(String name, Settings settings) {
            return new TokenBucketPolicy(
                    name,
                    settings.required("capacity", Integer.class),
                    settings.get("refill-tokens", Integer.class, DEFAULT_REFILL_TOKENS),
                    settings.required("refill-period", Duration.class));
        }

        @Override
        protected List<Object> values(TokenBucketPolicy policy) {
            return List.of(policy.capacity(), policy.refillTokens(), policy.refillPeriod());
        }

        @Override
        protected long[] numbers(TokenBucketPolicy policy) {
            return new long[] {
                policy.capacity(), policy.refillTokens(), policy.refillPeriod().toMillis()
            };
        }

        @Override
        protected PackedTransition transition(TokenBucketPolicy policy, Rates rates) {
            return new Transition(policy);
        }
    }

    /**
     * Over packed (used, refilledAt): the tokens taken and not yet refilled, so that a key's state
     * means the same under other numbers of its policy (a plan, a change at run time): a customer who
     * used 10 of a free plan's 10 has 990 of a pro plan's 1,000 left, and one who used 990 of the pro
     * plan is refused under the free one until the refills bring the used tokens below 10.
     *
     * <p>Refill: {@code periods = (now - refilledAt) / refillPeriod} whole periods give back
     * {@code periods * refillTokens} tokens and move {@code refilledAt} forward by exactly
     * {@code periods * refillPeriod}, so the part of a period already elapsed is kept (the source
     * document's Redis version set it to now and lost it). Once nothing is used the clock restarts
     * at now: time spent full earns nothing. A missing key is a full bucket. A {@code refilledAt}
     * after now (the clock stepped back) has earned nothing yet. The next unit comes with the next
     * refill, {@code refilledAt + refillPeriod}. Tokens left are {@code capacity - used}, below zero
     * when a smaller capacity applies than the one the tokens were taken under (reported as 0).
     *
     * <p>Receipt: when the call's last token is back, {@code refilledAt + ceil(used / refillTokens)
     * * refillPeriod} with {@code used} right after the call. Tokens come back in the order they were
     * taken, so later calls never move it, and at a refund the call's tokens still missing are those
     * the refills from now up to that time have yet to bring (whole refills: with several tokens per
     * refill, the last one may be counted whole); never more than its cost, nor than the bucket misses.
     */
    static final class Transition implements PackedTransition {

        private final int capacity;

        private final int refillTokens;

        private final long periodMillis;

        Transition(TokenBucketPolicy policy) {
            this.capacity = policy.capacity();
            this.refillTokens = policy.refillTokens();
            this.periodMillis = policy.refillPeriod().toMillis();
        }

        private long refill(long state, long now) {
            if (state == EMPTY || count(state) <= 0) {
                return pack(0, now);
            }
            int used = count(state);
            long refilledAt = time(state, now);
            long elapsed = now - refilledAt;
            if (elapsed < this.periodMillis) {
                return state;
            }
            long periods = elapsed / this.periodMillis;
            if (periods >= ceilDiv(used, this.refillTokens)) {
                return pack(0, now);
            }
            return pack(used - periods * this.refillTokens, refilledAt + periods * this.periodMillis);
        }

        private int tokens(long refilled) {
            return this.capacity - count(refilled);
        }

        /** When a refilled state is full again: its last used token back. */
        private long fullAt(long refilled, long now) {
            return time(refilled, now) + ceilDiv(count(refilled), this.refillTokens) * this.periodMillis;
        }

        private long untilFull(long refilled, long now) {
            return (count(refilled) <= 0) ? 0 : Math.max(0, fullAt(refilled, now) - now);
        }

        /** A refilled state that is not full gets its next tokens with the next refill. */
        private long untilNextRefill(long refilled, long now) {
            return (count(refilled) <= 0) ? 0 : time(refilled, now) + this.periodMillis - now;
        }

        @Override
        public long acquire(long state, long now, int cost) {
            long refilled = refill(state, now);
            return (tokens(refilled) < cost) ? REJECTED : pack(count(refilled) + cost, time(refilled, now));
        }

        /**
         * A reservation takes its tokens now, even those the bucket does not hold yet: the bucket goes
         * below empty (more used than the capacity) by what the refills up to the call's turn bring,
         * and the turn is when the refills have paid that debt, at most {@code maxWaitMillis} away.
         * Every later call waits for the debt and its own tokens.
         */
        @Override
        public long reserve(long state, long now, int cost, long maxWaitMillis) {
            long refilled = refill(state, now);
            long inUse = (long) count(refilled) + cost;
            if (inUse > this.capacity
                    && (inUse > MAX_COUNT || debtPaidAfter(inUse, time(refilled, now), now) > maxWaitMillis)) {
                return REJECTED;
            }
            return pack(inUse, time(refilled, now));
        }

        /** Milliseconds until the refills bring {@code inUse} tokens in use back to the capacity. */
        private long debtPaidAfter(long inUse, long refilledAt, long now) {
            return refilledAt + ceilDiv(inUse - this.capacity, this.refillTokens) * this.periodMillis - now;
        }

        /**
         * A charge after the call takes its tokens whatever the bucket holds: the bucket goes below
         * empty (more used than the capacity), at most {@code maxDebt} tokens below, and every later
         * call waits for the refills to pay that back.
         */
        @Override
        public long charge(long state, long now, int units, int maxDebt) {
            long refilled = refill(state, now);
            long used = count(refilled);
            long most = Math.min((long) this.capacity + maxDebt, MAX_COUNT);
            long next = Math.max(used, Math.min(used + units, most));
            return (next == used) ? state : pack(next, time(refilled, now));
        }

        @Override
        public int debt(long state, long now) {
            return Math.max(0, count(refill(state, now)) - this.capacity);
        }

        @Override
        public Decision reserved(long next, long now) {
            int inUse = count(next);
            if (inUse <= this.capacity) {
                return allowed(next, now);
            }
            long refilledAt = time(next, now);
            return Decision.reserved(
                    this.capacity,
                    0,
                    untilFull(next, now),
                    debtPaidAfter(inUse + 1L, refilledAt, now),
                    Math.max(1, fullAt(next, now)),
                    Math.max(0, debtPaidAfter(inUse, refilledAt, now)));
        }

        @Override
        public Decision allowed(long next, long now) {
            return Decision.allow(
                    this.capacity,
                    Math.max(0, tokens(next)),
                    untilFull(next, now),
                    untilNextRefill(next, now),
                    Math.max(1, fullAt(next, now)));
        }

        @Override
        public Decision rejected(long state, long now, int cost) {
            long refilled = refill(state, now);
            int tokens = tokens(refilled);
            long retryAfter =
                    time(refilled, now) + ceilDiv((long) cost - tokens, this.refillTokens) * this.periodMillis - now;
            return Decision.reject(this.capacity, Math.max(0, tokens), retryAfter, untilFull(refilled, now));
        }

        @Override
        public Decision peek(long state, long now) {
            long refilled = refill(state, now);
            if (tokens(refilled) >= 1) {
                return Decision.allow(
                        this.capacity, tokens(refilled), untilFull(refilled, now), untilNextRefill(refilled, now), 0);
            }
            return rejected(state, now, 1);
        }

        @Override
        public long refund(long state, long now, int cost) {
            long refilled = refill(state, now);
            long used = count(refilled) - (long) cost;
            return (used <= 0) ? EMPTY : pack(used, time(refilled, now));
        }

        @Override
        public long refund(long state, long now, int cost, long receipt) {
            long refilled = refill(state, now);
            int used = count(refilled);
            long refilledAt = time(refilled, now);
            long untilBack = receipt - refilledAt;
            if (used <= 0 || untilBack <= 0) {
                // every token the call took is back already
                return state;
            }
            long stillOut = ceilDiv(untilBack, this.periodMillis) * this.refillTokens;
            long left = used - Math.min(Math.min(cost, stillOut), used);
            return (left <= 0) ? EMPTY : pack(left, refilledAt);
        }

        private static long ceilDiv(long dividend, long divisor) {
            return (dividend + divisor - 1) / divisor;
        }
    }
}
