package dev.throttle.resilience;

import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.ThrottleStore;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A store that writes down every operation that changes state, as {@code "<operation> <policy> <key>"}
 * (non-blocking ones with {@code Async}), in the order they reach it, and passes it on. Thread-safe.
 */
final class RecordingStore implements ThrottleStore {

    private final ThrottleStore store;

    final List<String> operations = new CopyOnWriteArrayList<>();

    /** Whether its limiters ask for the acquires the store did not confirm to be kept for it. */
    private final boolean keepsUnconfirmed;

    RecordingStore(ThrottleStore store) {
        this(store, false);
    }

    RecordingStore(ThrottleStore store, boolean keepsUnconfirmed) {
        this.store = store;
        this.keepsUnconfirmed = keepsUnconfirmed;
    }

    /** Returns the operations recorded since {@code from}, and forgets none. */
    List<String> since(int from) {
        return List.copyOf(this.operations.subList(from, this.operations.size()));
    }

    @Override
    public Limiter limiter(Policy policy) {
        Limiter limiter = this.store.limiter(policy);
        return new Limiter() {

            @Override
            public Policy policy() {
                return policy;
            }

            @Override
            public boolean keepsUnconfirmedAcquires() {
                return RecordingStore.this.keepsUnconfirmed;
            }

            @Override
            public Decision tryAcquire(String key, int cost) {
                record("tryAcquire", key);
                return limiter.tryAcquire(key, cost);
            }

            @Override
            public void refund(String key, int cost) {
                record("refund", key);
                limiter.refund(key, cost);
            }

            @Override
            public void refund(String key, int cost, long receipt) {
                record("refund", key);
                limiter.refund(key, cost, receipt);
            }

            @Override
            public Decision peek(String key) {
                return limiter.peek(key);
            }

            @Override
            public int charge(String key, int units, int maxDebt) {
                record("charge", key);
                return limiter.charge(key, units, maxDebt);
            }

            @Override
            public CompletionStage<Integer> chargeAsync(String key, int units, int maxDebt) {
                record("chargeAsync", key);
                return limiter.chargeAsync(key, units, maxDebt);
            }

            @Override
            public void reset(String key) {
                record("reset", key);
                limiter.reset(key);
            }

            @Override
            public CompletionStage<Decision> tryAcquireAsync(String key, int cost) {
                record("tryAcquireAsync", key);
                return limiter.tryAcquireAsync(key, cost);
            }

            @Override
            public CompletionStage<Void> refundAsync(String key, int cost) {
                record("refundAsync", key);
                return limiter.refundAsync(key, cost);
            }

            @Override
            public CompletionStage<Void> refundAsync(String key, int cost, long receipt) {
                record("refundAsync", key);
                return limiter.refundAsync(key, cost, receipt);
            }

            @Override
            public CompletionStage<Decision> peekAsync(String key) {
                return limiter.peekAsync(key);
            }

            @Override
            public CompletionStage<Void> resetAsync(String key) {
                record("resetAsync", key);
                return limiter.resetAsync(key);
            }

            private void record(String operation, String key) {
                if (key.startsWith("\u0000probe:")) {
                    return; // the failure policy's health probe: a write on a key of its own, nobody's state
                }
                RecordingStore.this.operations.add(operation + " " + policy.name() + " " + key);
            }
        };
    }

    @Override
    public String kind() {
        return this.store.kind();
    }
}
