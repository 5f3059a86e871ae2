package dev.throttle;

import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The calls of one concurrency policy that wait for a slot ({@code wait}), per key, in the order they
 * came. A slot frees when another call ends, a moment no store can reserve in advance, so a waiter
 * takes a slot the way a caller without a wait does, and when every slot is in use it waits to be
 * told that the key was given back: by this instance's own releases at once ({@link #givenBack}),
 * by other instances' releases when the store hears them ({@link ThrottleStore#onGivenBack}), and
 * otherwise after the refusal's hint (at most {@link ConcurrencyPolicy#RETRY_HINT}, sooner when the
 * oldest slot's lease runs out first), so that a release nobody heard (a lease that ran out, a store
 * that hears nothing of other instances, an event lost) costs a waiter at most a hint of waiting.
 *
 * <p>A release wakes the first waiter not woken yet, so that waiters of one instance take freed slots
 * in the order they came, and one release costs one more try of the store, not one per waiter.
 * Across instances the first to try gets the slot. A waiter whose stage is cancelled leaves the
 * queue; a slot it took meanwhile is given back. A waiter that leaves without a slot passes its
 * wake-up on, so that a release it was woken by is not lost. Lock-free.
 */
final class SlotWaits {

    /** Gives back a slot that a waiter took after it was cancelled, and tells the next waiter. */
    @FunctionalInterface
    interface GiveBack {

        void giveBack(String key, Decision taken);
    }

    private final ConcurrentHashMap<String, Queue<Waiter>> waiting = new ConcurrentHashMap<>();

    /**
     * Takes a slot of {@code key}, waiting for one up to {@code maxWaitMillis}.
     * @param limiter the policy's limiter
     * @param key the store's key
     * @param maxWaitMillis the longest the call may wait, at least 1
     * @param giveBack what gives back a slot taken by a waiter that was cancelled meanwhile
     * @param lastCallNanos where the time the store took to answer the last try is written, so that the
     * store's latency is told apart from the wait
     * @return completes with the allowed decision, or with the last refusal once the wait is over;
     * cancelling it ends the wait
     */
    CompletableFuture<Decision> await(
            Limiter limiter, String key, long maxWaitMillis, GiveBack giveBack, AtomicLong lastCallNanos) {
        Waiter waiter = new Waiter(
                limiter,
                key,
                System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(maxWaitMillis),
                giveBack,
                lastCallNanos);
        // in the queue before the first try, so that a release during that try is not missed
        this.waiting.compute(key, (k, queue) -> {
            Queue<Waiter> waiters = (queue != null) ? queue : new ConcurrentLinkedQueue<>();
            waiters.add(waiter);
            return waiters;
        });
        waiter.result.whenComplete((decision, failure) -> leave(waiter));
        waiter.attempt();
        return waiter.result;
    }

    /**
     * Tells the waiters of {@code key} that it was given back: the first not woken yet tries again.
     * @param key the store's key
     */
    void givenBack(String key) {
        Queue<Waiter> waiters = this.waiting.get(key);
        if (waiters == null) {
            return;
        }
        for (Waiter waiter : waiters) {
            if (waiter.wake()) {
                return;
            }
        }
    }

    private void leave(Waiter waiter) {
        this.waiting.computeIfPresent(waiter.key, (k, waiters) -> {
            waiters.remove(waiter);
            return waiters.isEmpty() ? null : waiters;
        });
        if (waiter.passesWakeOn()) {
            givenBack(waiter.key);
        }
    }

    /** One call waiting for a slot. */
    private static final class Waiter {

        final Limiter limiter;

        final String key;

        final long deadline;

        final GiveBack giveBack;

        final AtomicLong lastCallNanos;

        final CompletableFuture<Decision> result = new CompletableFuture<>();

        /** Completed to make the waiter try again; armed anew before each try. */
        private volatile CompletableFuture<Boolean> wake = new CompletableFuture<>();

        /** Whether the waiter took a slot (and so used the release it may have been woken by). */
        private volatile boolean tookSlot;

        Waiter(Limiter limiter, String key, long deadline, GiveBack giveBack, AtomicLong lastCallNanos) {
            this.limiter = limiter;
            this.key = key;
            this.deadline = deadline;
            this.giveBack = giveBack;
            this.lastCallNanos = lastCallNanos;
        }

        /** Wakes the waiter by a release; false when it was woken already (and has not tried since). */
        boolean wake() {
            return this.wake.complete(Boolean.TRUE);
        }

        /** Whether a release woke the waiter and it left without using it. */
        boolean passesWakeOn() {
            return !this.tookSlot && Boolean.TRUE.equals(this.wake.getNow(Boolean.FALSE));
        }

        void attempt() {
            if (this.result.isDone()) {
                return;
            }
            CompletableFuture<Boolean> armed = new CompletableFuture<>();
            this.wake = armed;
            CompletableFuture<Decision> decided;
            long start = System.nanoTime();
            try {
                decided = this.limiter.tryAcquireAsync(this.key, 1).toCompletableFuture();
            } catch (RuntimeException | Error ex) {
                this.result.completeExceptionally(ex);
                return;
            }
            decided.whenComplete((decision, failure) -> {
                this.lastCallNanos.set(System.nanoTime() - start);
                if (failure != null) {
                    this.result.completeExceptionally(failure);
                } else if (decision.allowed()) {
                    this.tookSlot = true;
                    if (!this.result.complete(decision)) {
                        // cancelled while the store decided: the slot goes back to the next caller
                        this.giveBack.giveBack(this.key, decision);
                    }
                } else {
                    waitForRelease(armed, decision);
                }
            });
        }

        private void waitForRelease(CompletableFuture<Boolean> armed, Decision refused) {
            long left = this.deadline - System.nanoTime();
            if (left <= 0) {
                this.result.complete(refused);
                return;
            }
            long hint = TimeUnit.MILLISECONDS.toNanos(Math.max(1, refused.retryAfterMillis()));
            // the hint is how long the store says a slot may take; past the deadline, one last try
            armed.completeOnTimeout(Boolean.FALSE, Math.min(left, hint), TimeUnit.NANOSECONDS);
            armed.thenRun(this::attempt);
        }
    }
}
