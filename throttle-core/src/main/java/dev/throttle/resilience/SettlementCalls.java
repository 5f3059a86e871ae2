package dev.throttle.resilience;

import dev.throttle.Limiter;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * How a {@code ResilientLimiter} gives its store the refunds and resets the store is owed: sent now
 * when the store answers and owes nothing older, otherwise kept ({@link Settlements}) and applied when
 * it answers again, after what it was owed before. The one place for settlements, blocking or not.
 */
final class SettlementCalls {

    private static final CompletionStage<Void> DONE = CompletableFuture.completedStage(null);

    private final Limiter store;

    private final StoreHealth health;

    private final Settlements settlements;

    private final Settlements.Owed owed;

    private final StoreCalls calls;

    SettlementCalls(
            Limiter store, StoreHealth health, Settlements settlements, Settlements.Owed owed, StoreCalls calls) {
        this.store = store;
        this.health = health;
        this.settlements = settlements;
        this.owed = owed;
        this.calls = calls;
    }

    /**
     * Gives the store a refund or a reset it is owed, or keeps it for the store (see
     * {@link #sendNow}, and when the store fails the call); returns whether the store carried it out.
     */
    boolean settle(String key, boolean reset, int cost, long receipt) {
        if (!sendNow(key, reset, cost, receipt)) {
            return false;
        }
        try {
            if (reset) {
                this.store.reset(key);
            } else {
                this.store.refund(key, cost, receipt);
            }
        } catch (RuntimeException ex) {
            missed(this.calls.failed(ex), true, key, reset, cost, receipt);
            return false;
        }
        this.health.answered();
        return true;
    }

    /** Like {@link #settle}, without blocking; never fails. */
    CompletionStage<Void> settleAsync(String key, boolean reset, int cost, long receipt) {
        if (!sendNow(key, reset, cost, receipt)) {
            return DONE;
        }
        try {
            CompletionStage<Void> call =
                    reset ? this.store.resetAsync(key) : this.store.refundAsync(key, cost, receipt);
            return call.handle((ignored, failure) -> {
                if (failure != null) {
                    missed(this.calls.failed(StoreCalls.unwrap(failure)), true, key, reset, cost, receipt);
                } else {
                    this.health.answered();
                }
                return null;
            });
        } catch (RuntimeException ex) {
            missed(this.calls.failed(ex), true, key, reset, cost, receipt);
            return DONE;
        }
    }

    /**
     * Whether to send a settlement to the store now; otherwise it is kept: the store is down (then it
     * is reported), or it is owed earlier settlements (then this one waits its turn behind them).
     */
    private boolean sendNow(String key, boolean reset, int cost, long receipt) {
        RuntimeException error = this.calls.skipStore();
        if (error != null) {
            missed(error, false, key, reset, cost, receipt);
            return false;
        }
        if (this.settlements.isEmpty()) {
            return true;
        }
        this.owed.keep(key, reset, cost, receipt);
        this.health.applyOwed();
        return false;
    }

    /**
     * Reports a settlement that missed the store and keeps it for the store, except a refund whose
     * call was sent and got no answer in time: the store may have carried it out, and a refund applied
     * twice would hand out a unit that nobody gave back (a reset applied twice is one reset).
     */
    private void missed(RuntimeException error, boolean sent, String key, boolean reset, int cost, long receipt) {
        this.calls.report(error);
        if (reset || !sent || !StoreHealth.isTimeout(error)) {
            this.owed.keep(key, reset, cost, receipt);
        }
    }
}
