package dev.throttle.resilience;

import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.resilience.Settlements.Kind;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * How a {@code ResilientLimiter} gives its store the refunds, resets and charges the store is owed: sent now
 * when the store answers and owes nothing older, otherwise kept ({@link Settlements}) and applied when
 * it answers again, after what it was owed before. The one place for settlements, blocking or not.
 */
final class SettlementCalls {

    private static final CompletionStage<Void> DONE = CompletableFuture.completedStage(null);

    private final Policy policy;

    private final Limiter store;

    private final StoreCalls calls;

    SettlementCalls(Policy policy, Limiter store, StoreCalls calls) {
        this.policy = policy;
        this.store = store;
        this.calls = calls;
    }

    /**
     * Gives the store a refund or a reset it is owed, or keeps it for the store (see
     * {@link #sendNow}, and when the store fails the call); returns whether the store carried it out.
     */
    boolean settle(String key, boolean reset, int cost, long receipt) {
        Kind kind = reset ? Kind.RESET : Kind.REFUND;
        StoreHealth health = this.calls.healthOf(key);
        if (!sendNow(health, key, kind, cost, receipt)) {
            return false;
        }
        try {
            if (reset) {
                this.store.reset(key);
            } else {
                this.store.refund(key, cost, receipt);
            }
        } catch (RuntimeException ex) {
            missed(health, StoreCalls.failed(health, ex), true, key, kind, cost, receipt);
            return false;
        }
        health.answered();
        return true;
    }

    /**
     * Gives the store a charge of a cost known after the call, or keeps it for the store as a refund
     * or a reset is kept; returns the units the key owes, or -1 when the store did not carry it out.
     */
    int charge(String key, int units, int maxDebt) {
        StoreHealth health = this.calls.healthOf(key);
        if (!sendNow(health, key, Kind.CHARGE, units, maxDebt)) {
            return -1;
        }
        int debt;
        try {
            debt = this.store.charge(key, units, maxDebt);
        } catch (UnsupportedOperationException ex) {
            // not a failure of the store: it never charges, and keeping the charge would not change that
            throw ex;
        } catch (RuntimeException ex) {
            missed(health, StoreCalls.failed(health, ex), true, key, Kind.CHARGE, units, maxDebt);
            return -1;
        }
        health.answered();
        return debt;
    }

    /**
     * Keeps for the store an acquire allowed without its confirmation, behind what it is owed already,
     * and applies what it is owed at once when it answers (a call whose replication was not confirmed
     * reached a store that still answers).
     */
    void keepAcquire(String key, int cost) {
        StoreHealth health = this.calls.healthOf(key);
        owed(health).keep(key, Kind.ACQUIRE, cost, 0);
        if (!health.isDown()) {
            health.applyOwed();
        }
    }

    /** Like {@link #settle}, without blocking; never fails. */
    CompletionStage<Void> settleAsync(String key, boolean reset, int cost, long receipt) {
        Kind kind = reset ? Kind.RESET : Kind.REFUND;
        return settleAsync(
                key,
                kind,
                cost,
                receipt,
                () -> reset ? this.store.resetAsync(key) : this.store.refundAsync(key, cost, receipt));
    }

    /** Like {@link #charge}, without blocking; fails only where {@link #charge} throws. */
    CompletionStage<Integer> chargeAsync(String key, int units, int maxDebt) {
        CompletableFuture<Integer> debt = new CompletableFuture<>();
        settleAsync(
                        key,
                        Kind.CHARGE,
                        units,
                        maxDebt,
                        () -> this.store
                                .chargeAsync(key, units, maxDebt)
                                .whenComplete((owed, failure) -> {
                                    if (unsupported(failure)) {
                                        debt.completeExceptionally(StoreCalls.unwrap(failure));
                                    }
                                })
                                .thenAccept(debt::complete))
                .whenComplete((done, never) -> debt.complete(-1));
        return debt;
    }

    private CompletionStage<Void> settleAsync(
            String key, Kind kind, int cost, long receipt, Supplier<CompletionStage<Void>> send) {
        StoreHealth health = this.calls.healthOf(key);
        if (!sendNow(health, key, kind, cost, receipt)) {
            return DONE;
        }
        try {
            return send.get().handle((ignored, failure) -> {
                if (unsupported(failure)) {
                    // the store never charges: not its failure, and nothing to keep
                    return null;
                }
                if (failure != null) {
                    missed(
                            health,
                            StoreCalls.failed(health, StoreCalls.unwrap(failure)),
                            true,
                            key,
                            kind,
                            cost,
                            receipt);
                } else {
                    health.answered();
                }
                return null;
            });
        } catch (RuntimeException ex) {
            missed(health, StoreCalls.failed(health, ex), true, key, kind, cost, receipt);
            return DONE;
        }
    }

    private static boolean unsupported(@Nullable Throwable failure) {
        return failure != null && StoreCalls.unwrap(failure) instanceof UnsupportedOperationException;
    }

    /**
     * Whether to send a settlement to the store now; otherwise it is kept for the key's partition: it
     * is down (then it is reported), or it is owed earlier settlements (then this one waits its turn
     * behind them).
     */
    private boolean sendNow(StoreHealth health, String key, Kind kind, int cost, long receipt) {
        RuntimeException error = this.calls.skipStore(health);
        if (error != null) {
            missed(health, error, false, key, kind, cost, receipt);
            return false;
        }
        if (health.settlements().isEmpty()) {
            return true;
        }
        owed(health).keep(key, kind, cost, receipt);
        health.applyOwed();
        return false;
    }

    /** This policy's settlements owed to the partition of {@code health}. */
    private Settlements.Owed owed(StoreHealth health) {
        return health.settlements().of(this.policy, this.store);
    }

    /**
     * Reports a settlement that missed the store and keeps it for the store, except a refund whose
     * call was sent and got no answer in time (or whose caller was interrupted while it waited): the store may have carried it out, and a refund applied
     * twice would hand out a unit that nobody gave back (a reset applied twice is one reset; a charge
     * applied twice takes too much, which errs on the side the limit is for).
     */
    private void missed(
            StoreHealth health, RuntimeException error, boolean sent, String key, Kind kind, int cost, long receipt) {
        this.calls.report(error);
        if (kind != Kind.REFUND || !sent || !(StoreHealth.isTimeout(error) || StoreHealth.isInterrupt(error))) {
            owed(health).keep(key, kind, cost, receipt);
        }
    }
}
