package dev.throttle.testing;

import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.ThrottleStore;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * A {@link ThrottleStore} that fails on demand: a test double of the store SPI (not of any real
 * store), for tests of what wraps a store. While up it passes every call to the store it wraps,
 * the non-blocking ones to its non-blocking methods (refunds with their receipts); while down every
 * call fails, synchronously or through its future, and while slow every call fails as a timeout. It counts the calls that reached it, so a test can prove that a call was
 * answered without asking it, and it can hold the failure policy's health probes for the test to
 * complete. Thread-safe.
 */
public final class FlakyStore implements ThrottleStore {

    private final ThrottleStore store;

    private final String kind;

    private volatile boolean down;

    private volatile boolean slow;

    private volatile boolean holdProbes;

    private final AtomicInteger calls = new AtomicInteger();

    private final AtomicInteger decisions = new AtomicInteger();

    private final AtomicInteger probes = new AtomicInteger();

    private final List<CompletableFuture<Decision>> heldProbes = new CopyOnWriteArrayList<>();

    /**
     * Wraps {@code store}, reporting its kind.
     * @param store where state lives while this store is up
     */
    public FlakyStore(ThrottleStore store) {
        this(store, store.kind());
    }

    /**
     * Wraps {@code store}, reporting {@code kind} as its own.
     * @param store where state lives while this store is up
     * @param kind the kind to report
     */
    public FlakyStore(ThrottleStore store, String kind) {
        this.store = store;
        this.kind = kind;
    }

    /** From now on every call fails. */
    public void goDown() {
        this.down = true;
    }

    /**
     * From now on every call fails as one that got no answer in time does: its cause is a
     * {@link TimeoutException}.
     */
    public void goSlow() {
        this.slow = true;
    }

    /** From now on calls reach the wrapped store again. */
    public void comeBack() {
        this.down = false;
        this.slow = false;
    }

    /**
     * Whether the failure policy's health probes (a {@code tryAcquireAsync} on a key of its own) answer nothing until the test completes them ({@link #heldProbes()}).
     * @param hold whether to hold them
     */
    public void holdProbes(boolean hold) {
        this.holdProbes = hold;
    }

    /**
     * Returns the peeks held so far, in the order they were asked.
     * @return a copy of the list
     */
    public List<CompletableFuture<Decision>> heldProbes() {
        return new ArrayList<>(this.heldProbes);
    }

    /**
     * Returns how many calls of any kind reached this store, failed ones included.
     * @return the count
     */
    public int calls() {
        return this.calls.get();
    }

    /**
     * Returns how many {@code tryAcquire} calls, blocking or not, reached this store.
     * @return the count
     */
    public int decisions() {
        return this.decisions.get();
    }

    /**
     * Returns how many health probes (a write on a key of the failure policy's own) reached this store.
     * @return the count
     */
    public int probes() {
        return this.probes.get();
    }

    private void countDecision(String key) {
        (isProbe(key) ? this.probes : this.decisions).incrementAndGet();
    }

    /** The failure policy's health probe is a write on a key no caller can name: not a decision. */
    private static boolean isProbe(String key) {
        return key.startsWith("\u0000probe:");
    }

    @Override
    public Limiter limiter(Policy policy) {
        return new FlakyLimiter(this.store.limiter(policy));
    }

    @Override
    public String kind() {
        return this.kind;
    }

    @Override
    public void close() {
        this.store.close();
    }

    private CompletableFuture<Decision> hold() {
        CompletableFuture<Decision> peek = new CompletableFuture<>();
        this.heldProbes.add(peek);
        return peek;
    }

    private final class FlakyLimiter implements Limiter {

        private final Limiter limiter;

        FlakyLimiter(Limiter limiter) {
            this.limiter = limiter;
        }

        @Override
        public Policy policy() {
            return this.limiter.policy();
        }

        @Override
        public boolean keepsUnconfirmedAcquires() {
            return this.limiter.keepsUnconfirmedAcquires();
        }

        @Override
        public Decision tryAcquire(String key, int cost) {
            countDecision(key);
            reached();
            return this.limiter.tryAcquire(key, cost);
        }

        @Override
        public void refund(String key, int cost) {
            reached();
            this.limiter.refund(key, cost);
        }

        @Override
        public void refund(String key, int cost, long receipt) {
            reached();
            this.limiter.refund(key, cost, receipt);
        }

        @Override
        public int charge(String key, int units, int maxDebt) {
            reached();
            return this.limiter.charge(key, units, maxDebt);
        }

        @Override
        public CompletionStage<Integer> chargeAsync(String key, int units, int maxDebt) {
            return async(() -> this.limiter.chargeAsync(key, units, maxDebt));
        }

        @Override
        public Decision peek(String key) {
            reached();
            return this.limiter.peek(key);
        }

        @Override
        public void reset(String key) {
            reached();
            this.limiter.reset(key);
        }

        @Override
        public CompletionStage<Decision> tryAcquireAsync(String key, int cost) {
            countDecision(key);
            if (FlakyStore.this.holdProbes && isProbe(key)) {
                FlakyStore.this.calls.incrementAndGet();
                return hold();
            }
            return async(() -> this.limiter.tryAcquireAsync(key, cost));
        }

        @Override
        public CompletionStage<Void> refundAsync(String key, int cost) {
            return async(() -> this.limiter.refundAsync(key, cost));
        }

        @Override
        public CompletionStage<Void> refundAsync(String key, int cost, long receipt) {
            return async(() -> this.limiter.refundAsync(key, cost, receipt));
        }

        @Override
        public CompletionStage<Decision> peekAsync(String key) {
            return async(() -> this.limiter.peekAsync(key));
        }

        @Override
        public CompletionStage<Void> resetAsync(String key) {
            return async(() -> this.limiter.resetAsync(key));
        }

        /** Fails as a networked store's future does: the call returns, its future fails. */
        private <T> CompletionStage<T> async(Supplier<CompletionStage<T>> call) {
            FlakyStore.this.calls.incrementAndGet();
            if (FlakyStore.this.down || FlakyStore.this.slow) {
                return CompletableFuture.failedFuture(failure());
            }
            return call.get();
        }

        private void reached() {
            FlakyStore.this.calls.incrementAndGet();
            if (FlakyStore.this.down || FlakyStore.this.slow) {
                throw failure();
            }
        }

        private IllegalStateException failure() {
            return FlakyStore.this.down
                    ? new IllegalStateException("flaky store is down")
                    : new IllegalStateException("flaky store gave no answer in time", new TimeoutException());
        }
    }
}
