package dev.throttle.resilience;

import dev.throttle.Decision;
import dev.throttle.DecisionSource;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.SourcedDecision;
import dev.throttle.SourcedLimiter;
import dev.throttle.ThrottleListener;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * One policy of a {@link ResilientThrottleStore}: each call goes to the store unless the store is
 * known to be down; a call the store fails, or one made while it is down, is reported to the
 * listener and answered by the fallback instead. {@link StoreCalls} is the one place that knows
 * whether a decision or a peek reached the store; {@link SettlementCalls} the one place for refunds
 * and resets that the store is owed.
 *
 * <p>A refund goes to whoever took the unit: the fallback when the decision's receipt carries
 * {@link Fallback#RECEIPT}, the store otherwise. What the store is owed and could not be given now is
 * kept ({@link Settlements}) and applied when it answers again, after what it was owed before.
 */
final class ResilientLimiter implements SourcedLimiter, RememberedRefusals {

    private static final CompletionStage<Void> DONE = CompletableFuture.completedStage(null);

    /** What a store's limiter that remembers no refusals remembers. */
    private static final RememberedRefusals NOTHING = new RememberedRefusals() {

        @Override
        public @Nullable Decision rememberedRefusal(String key, int cost) {
            return null;
        }

        @Override
        public void forgetRemembered(String key) {}
    };

    private final Policy policy;

    private final Limiter store;

    /** The store's limiter again when it says who decided (a near cache answers some calls), else null. */
    private final SourcedLimiter sourcedStore;

    /** The refusals the store's limiter remembers (the Redis store's near cache), or {@link #NOTHING}. */
    private final RememberedRefusals remembered;

    private final DecisionSource storeSource;

    private final DecisionSource nearCacheSource;

    private final Fallback fallback;

    /** The one place that knows whether a call reached the store. */
    private final StoreCalls calls;

    /** The one place for refunds and resets that the store is owed. */
    private final SettlementCalls settle;

    /** Whether acquires allowed without the store's confirmation are kept for it ({@link Limiter#keepsUnconfirmedAcquires()}). */
    private final boolean keepsUnconfirmed;

    ResilientLimiter(
            Policy policy,
            Limiter store,
            DecisionSource storeSource,
            DecisionSource nearCacheSource,
            Fallback fallback,
            StoreHealths healths,
            ThrottleListener listener) {
        this.policy = policy;
        this.store = store;
        this.sourcedStore = (store instanceof SourcedLimiter sourced) ? sourced : null;
        this.remembered = (store instanceof RememberedRefusals refusals) ? refusals : NOTHING;
        this.storeSource = storeSource;
        this.nearCacheSource = nearCacheSource;
        this.fallback = fallback;
        this.calls = new StoreCalls(policy, store, healths, listener);
        this.settle = new SettlementCalls(policy, store, this.calls);
        this.keepsUnconfirmed = store.keepsUnconfirmedAcquires();
        if (this.keepsUnconfirmed) {
            healths.probeThrough(store);
        }
    }

    @Override
    public Policy policy() {
        return this.policy;
    }

    /** The store's partition of the key: a wrapper adds no partitions of its own. */
    @Override
    public Object partition(String key) {
        return this.store.partition(key);
    }

    /** The store's: during an outage a release is kept, or given to the local store, without waiting either way. */
    @Override
    public boolean decidesInOrderMade() {
        return this.store.decidesInOrderMade();
    }

    @Override
    public Decision tryAcquire(String key, int cost) {
        if (this.sourcedStore != null) {
            // asked who decided: a near cache's answer is no sign that the store answers
            return tryAcquireSourced(key, cost).decision();
        }
        return this.calls.call(
                key,
                () -> this.store.tryAcquire(key, cost),
                () -> instead(key, cost).decision());
    }

    /**
     * Keeps for the store an acquire that the failure mode allowed in its place, when the store asks
     * for that; returns the decision. A refusal took nothing, so nothing is kept for it.
     */
    private Decision unconfirmed(String key, int cost, Decision decision) {
        if (this.keepsUnconfirmed && decision.allowed()) {
            this.settle.keepAcquire(key, cost);
        }
        return decision;
    }

    @Override
    public SourcedDecision tryAcquireSourced(String key, int cost) {
        return this.calls.call(key, () -> storeDecision(key, cost), () -> instead(key, cost));
    }

    private SourcedDecision storeDecision(String key, int cost) {
        return (this.sourcedStore != null)
                ? this.sourcedStore.tryAcquireSourced(key, cost)
                : new SourcedDecision(this.store.tryAcquire(key, cost), this.storeSource);
    }

    /**
     * The answer while the store cannot give one: a refusal the store gave earlier and that is still
     * true, else the fallback's.
     */
    private SourcedDecision instead(String key, int cost) {
        Decision remembered = null;
        try {
            remembered = this.remembered.rememberedRefusal(key, cost);
        } catch (RuntimeException ex) {
            // it must never throw; if it does, the fallback answers
        }
        if (remembered != null) {
            return new SourcedDecision(remembered, this.nearCacheSource);
        }
        SourcedDecision answer = this.fallback.tryAcquire(key, cost);
        unconfirmed(key, cost, answer.decision());
        return answer;
    }

    /**
     * A reservation goes to the store, never answered from a remembered refusal (a call that may
     * wait can be let in where one that may not is refused); while the store cannot answer, the
     * fallback decides (a local fallback reserves on this instance, its receipt marked as the
     * fallback's, so that a waiter that gives up refunds it there).
     */
    @Override
    public Decision reserve(String key, int cost, long maxWaitMillis) {
        if (maxWaitMillis == 0) {
            return tryAcquire(key, cost);
        }
        return this.calls.call(
                key,
                () -> this.store.reserve(key, cost, maxWaitMillis),
                () -> unconfirmed(
                        key,
                        cost,
                        this.fallback.reserve(key, cost, maxWaitMillis).decision()));
    }

    @Override
    public CompletionStage<Decision> reserveAsync(String key, int cost, long maxWaitMillis) {
        if (maxWaitMillis == 0) {
            return tryAcquireAsync(key, cost);
        }
        return this.calls.callAsync(
                key,
                () -> this.store.reserveAsync(key, cost, maxWaitMillis),
                () -> unconfirmed(
                        key,
                        cost,
                        this.fallback.reserve(key, cost, maxWaitMillis).decision()));
    }

    /**
     * Without a receipt nobody can tell who took the unit: it goes to whoever answers now, the
     * fallback during an outage.
     */
    @Override
    public void refund(String key, int cost) {
        this.calls.call(
                key,
                () -> {
                    this.store.refund(key, cost);
                    return null;
                },
                () -> {
                    this.fallback.refund(key, cost);
                    return null;
                });
    }

    /**
     * Gives the unit back to whoever took it: the fallback, or the store (now, or when it answers
     * again).
     */
    @Override
    public void refund(String key, int cost, long receipt) {
        if (Fallback.allowedIt(receipt)) {
            this.fallback.refund(key, cost, receipt);
            return;
        }
        this.settle.settle(key, false, cost, receipt);
    }

    /**
     * A call of a policy with several limits that the store allowed is refunded in the store by each
     * limit's receipt; one the store could not take now is kept for it by the combined receipt (each
     * limit then gives back as a refund without a receipt does).
     */
    @Override
    public void refund(String key, int cost, Decision taken) {
        if (taken.limitCount() == 1 || Fallback.allowedIt(taken.receipt())) {
            refund(key, cost, taken.receipt());
            return;
        }
        try {
            this.store.refund(key, cost, taken);
        } catch (RuntimeException ex) {
            this.settle.settle(key, false, cost, taken.receipt());
        }
    }

    /**
     * Charges the store, or, when it cannot be reached, keeps the charge for it as a refund is kept;
     * the fallback takes it too while the store cannot answer, so that the limit holds on this
     * instance meanwhile.
     */
    @Override
    public int charge(String key, int units, int maxDebt) {
        int debt = this.settle.charge(key, units, maxDebt);
        if (debt < 0) {
            this.fallback.charge(key, units, maxDebt);
        }
        return debt;
    }

    @Override
    public CompletionStage<Integer> chargeAsync(String key, int units, int maxDebt) {
        return this.settle.chargeAsync(key, units, maxDebt).thenApply((debt) -> {
            if (debt < 0) {
                this.fallback.charge(key, units, maxDebt);
            }
            return debt;
        });
    }

    @Override
    public Decision peek(String key) {
        return this.calls.call(key, () -> this.store.peek(key), () -> this.fallback.peek(key));
    }

    @Override
    public void reset(String key) {
        tryReset(key);
    }

    /**
     * Forgets the key in the fallback too, first: a user unlocked while the store answers must not be
     * locked again by stale local state in a later outage, and one unlocked during an outage is
     * unlocked on this instance at once. A reset that misses the store is kept for it.
     */
    @Override
    public boolean tryReset(String key) {
        this.fallback.reset(key);
        boolean reset = this.settle.settle(key, true, 0, 0);
        if (!reset) {
            // the store forgets its remembered refusal once it has the reset; this instance at once
            this.remembered.forgetRemembered(key);
        }
        return reset;
    }

    @Override
    public CompletionStage<Decision> tryAcquireAsync(String key, int cost) {
        if (this.sourcedStore != null) {
            return tryAcquireSourcedAsync(key, cost).thenApply(SourcedDecision::decision);
        }
        return this.calls.callAsync(
                key,
                () -> this.store.tryAcquireAsync(key, cost),
                () -> instead(key, cost).decision());
    }

    @Override
    public CompletionStage<SourcedDecision> tryAcquireSourcedAsync(String key, int cost) {
        if (this.sourcedStore != null) {
            return this.calls.callAsync(
                    key, () -> this.sourcedStore.tryAcquireSourcedAsync(key, cost), () -> instead(key, cost));
        }
        return this.calls.callAsync(
                key,
                () -> this.store
                        .tryAcquireAsync(key, cost)
                        .thenApply((decision) -> new SourcedDecision(decision, this.storeSource)),
                () -> instead(key, cost));
    }

    @Override
    public @Nullable Decision rememberedRefusal(String key, int cost) {
        return this.remembered.rememberedRefusal(key, cost);
    }

    @Override
    public CompletionStage<Void> refundAsync(String key, int cost) {
        return this.calls.callAsync(key, () -> this.store.refundAsync(key, cost), () -> {
            this.fallback.refund(key, cost);
            return null;
        });
    }

    @Override
    public CompletionStage<Void> refundAsync(String key, int cost, long receipt) {
        if (Fallback.allowedIt(receipt)) {
            this.fallback.refund(key, cost, receipt);
            return DONE;
        }
        return this.settle.settleAsync(key, false, cost, receipt);
    }

    @Override
    public CompletionStage<Decision> peekAsync(String key) {
        return this.calls.callAsync(key, () -> this.store.peekAsync(key), () -> this.fallback.peek(key));
    }

    @Override
    public CompletionStage<Void> resetAsync(String key) {
        this.fallback.reset(key);
        this.remembered.forgetRemembered(key);
        return this.settle.settleAsync(key, true, 0, 0);
    }

    @Override
    public void forgetRemembered(String key) {
        this.remembered.forgetRemembered(key);
    }
}
