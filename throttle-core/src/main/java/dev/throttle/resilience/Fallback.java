package dev.throttle.resilience;

import dev.throttle.Decision;
import dev.throttle.DecisionSource;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.SourcedDecision;

/**
 * What answers one limiter's calls while its store cannot: made from the limiter's
 * {@link FailureMode} when the policy is bound. Never blocks and never throws.
 *
 * <p>Every call it allows carries {@link #RECEIPT} in its receipt, so that a refund of it comes back
 * here (the unit is the fallback's to give back), whichever store answers when the refund is made.
 */
abstract class Fallback {

    /**
     * The receipt bit of a call that the fallback allowed. Receipts are not negative, so a store's own
     * receipts must stay below it (2^62); below it sits the local store's own receipt, if any.
     */
    static final long RECEIPT = 1L << 62;

    abstract SourcedDecision tryAcquire(String key, int cost);

    abstract Decision peek(String key);

    /** A reservation while the store cannot answer: a fixed answer is its answer to every call. */
    SourcedDecision reserve(String key, int cost, long maxWaitMillis) {
        return tryAcquire(key, cost);
    }

    /** Gives back what a fallback decision took; a fixed answer took nothing. */
    void refund(String key, int cost) {}

    /**
     * Gives back what one fallback decision took, by its receipt (with {@link #RECEIPT} cleared); a
     * fixed answer took nothing.
     */
    void refund(String key, int cost, long receipt) {}

    /**
     * Takes a cost known after the call into the fallback's own state, so that it holds the limit
     * while it decides; a fixed answer keeps no state.
     */
    void charge(String key, int units, int maxDebt) {}

    /** Whether a decision's receipt says the fallback allowed it. */
    static boolean allowedIt(long receipt) {
        return (receipt & RECEIPT) != 0;
    }

    /** Forgets what fallback decisions wrote; a fixed answer wrote nothing. */
    void reset(String key) {}

    /**
     * The fallback of {@code policy} under {@code mode}.
     * @param local the local store's limiter of the policy; used by {@link FailureMode#LOCAL} only
     * @param sources who answers under each mode
     */
    static Fallback of(FailureMode mode, Policy policy, Limiter local, Sources sources) {
        return switch (mode) {
            case OPEN ->
                new Fixed(new SourcedDecision(
                        Decision.allow(policy.quota(), policy.quota(), 0).withReceipt(RECEIPT), sources.open()));
            case CLOSED -> {
                long retry = ResilientThrottleStore.CLOSED_RETRY_AFTER.toMillis();
                yield new Fixed(
                        new SourcedDecision(Decision.reject(policy.quota(), 0, retry, retry), sources.closed()));
            }
            case LOCAL -> new Local(local, sources.local());
        };
    }

    /** Who answers in a failure mode's place, made once per store so that no call makes one. */
    record Sources(DecisionSource open, DecisionSource closed, DecisionSource local) {

        static Sources of(String store) {
            return new Sources(
                    DecisionSource.failureMode(store, "open"),
                    DecisionSource.failureMode(store, "closed"),
                    DecisionSource.store("local"));
        }
    }

    /** Open or closed: one answer for every call, which says nothing about the key. */
    private static final class Fixed extends Fallback {

        private final SourcedDecision answer;

        Fixed(SourcedDecision answer) {
            this.answer = answer;
        }

        @Override
        SourcedDecision tryAcquire(String key, int cost) {
            return this.answer;
        }

        @Override
        Decision peek(String key) {
            return this.answer.decision();
        }
    }

    /**
     * Local: a bounded memory store on this instance decides, so each instance enforces the policy
     * on its own traffic. Its state is not merged into the store when the store is back.
     */
    private static final class Local extends Fallback {

        private final Limiter local;

        private final DecisionSource source;

        Local(Limiter local, DecisionSource source) {
            this.local = local;
            this.source = source;
        }

        @Override
        SourcedDecision tryAcquire(String key, int cost) {
            Decision decision = this.local.tryAcquire(key, cost);
            if (decision.allowed()) {
                decision = decision.withReceipt(decision.receipt() | RECEIPT);
            }
            return new SourcedDecision(decision, this.source);
        }

        @Override
        SourcedDecision reserve(String key, int cost, long maxWaitMillis) {
            Decision decision = this.local.reserve(key, cost, maxWaitMillis);
            if (decision.allowed()) {
                decision = decision.withReceipt(decision.receipt() | RECEIPT);
            }
            return new SourcedDecision(decision, this.source);
        }

        @Override
        Decision peek(String key) {
            return this.local.peek(key);
        }

        @Override
        void refund(String key, int cost) {
            this.local.refund(key, cost);
        }

        @Override
        void refund(String key, int cost, long receipt) {
            this.local.refund(key, cost, receipt & ~RECEIPT);
        }

        @Override
        void reset(String key) {
            this.local.reset(key);
        }

        @Override
        void charge(String key, int units, int maxDebt) {
            this.local.charge(key, units, maxDebt);
        }
    }
}
