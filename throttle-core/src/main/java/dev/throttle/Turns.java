package dev.throttle;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * Waiting for a reserved turn ({@link Decision#waitMillis()}): on the calling thread
 * ({@link #await}), or without blocking one ({@link #later}). A waiter that gives up (interrupted,
 * cancelled) refunds its reservation by its receipt, so that the next caller gets the turn; the
 * refund happens once, and never after the call has proceeded.
 */
final class Turns {

    private Turns() {}

    /**
     * Sleeps until the call's turn. Interrupted, it gives the turn back, keeps the interrupt and
     * refuses the call, as a limiter that could not grant it in time would.
     * @throws ThrottledException when the thread is interrupted while it waits
     */
    static void await(BoundPolicy bound, @Nullable String key, int cost, Decision reserved) {
        long wait = reserved.waitMillis();
        if (wait == 0) {
            return;
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(wait);
        try {
            for (long left = deadline - System.nanoTime(); left > 0; left = deadline - System.nanoTime()) {
                TimeUnit.NANOSECONDS.sleep(left);
            }
        } catch (InterruptedException ex) {
            giveBack(bound, key, cost, reserved);
            Thread.currentThread().interrupt();
            throw new ThrottledException(bound.policy(), gaveUp(reserved, deadline));
        }
    }

    /**
     * Completes with the decision when its turn comes, without blocking a thread meanwhile;
     * cancelling the returned stage (or completing it otherwise) before then gives the turn back.
     * @param delayed runs a task after a delay, on a thread that may run the caller's continuation
     */
    static CompletableFuture<Decision> later(
            BoundPolicy bound, @Nullable String key, int cost, Decision reserved, Delayer delayed) {
        CompletableFuture<Decision> turn = new CompletableFuture<>();
        long wait = reserved.waitMillis();
        if (wait == 0) {
            turn.complete(reserved);
            return turn;
        }
        AtomicBoolean settled = new AtomicBoolean();
        turn.whenComplete((decision, failure) -> {
            // cancelled (or completed by someone else) before the turn: the turn goes back
            if (settled.compareAndSet(false, true)) {
                giveBack(bound, key, cost, reserved);
            }
        });
        delayed.after(wait, () -> {
            if (settled.compareAndSet(false, true)) {
                turn.complete(reserved);
            }
        });
        return turn;
    }

    /** A waiter whose stage is already given to its caller: refused or let in, as {@link #later}. */
    static CompletionStage<Decision> acquireLater(
            BoundPolicy bound, @Nullable String key, int cost, CompletionStage<Decision> decided, Delayer delayed) {
        CompletableFuture<Decision> result = new CompletableFuture<>();
        if (decided instanceof CompletableFuture<Decision> deciding
                && bound.policy().algorithm().waitsForARelease()) {
            // a caller that gives up while it waits for a slot ends that wait too (a slot taken meanwhile
            // goes back); a decision sent to the store is let finish and given back below
            result.whenComplete((done, gaveUp) -> {
                if (result.isCancelled()) {
                    deciding.cancel(false);
                }
            });
        }
        decided.whenComplete((decision, failure) -> {
            if (failure != null) {
                result.completeExceptionally(failure);
            } else if (!decision.allowed()) {
                result.completeExceptionally(new ThrottledException(bound.policy(), decision));
            } else if (result.isDone()) {
                // given up while the store decided
                giveBack(bound, key, cost, decision);
            } else {
                CompletableFuture<Decision> turn = later(bound, key, cost, decision, delayed);
                // the caller's cancel reaches the turn, and the turn's end the caller
                result.whenComplete((done, gaveUp) -> turn.cancel(false));
                turn.whenComplete((done, gaveUp) -> {
                    if (gaveUp == null) {
                        result.complete(done);
                    }
                });
            }
        });
        return result;
    }

    /** What a waiter that gave up is told: a refusal for the rest of its wait. */
    static Decision gaveUp(Decision reserved, long deadlineNanos) {
        long left = TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
        return Decision.reject(
                reserved.limit(), 0, Math.max(1, left), Math.max(reserved.resetAfterMillis(), Math.max(1, left)));
    }

    /** Gives a turn back; a store that fails now is the failure policy's to report, not the waiter's. */
    static void giveBack(BoundPolicy bound, @Nullable String key, int cost, Decision reserved) {
        try {
            bound.refund(key, cost, reserved);
        } catch (RuntimeException ex) {
            // the turn then passes unused: the policy is kept, only this caller's turn is lost
        }
    }

    /** Runs a task after a delay without blocking a thread meanwhile. */
    @FunctionalInterface
    interface Delayer {

        /** The JDK's: a timer thread, then the common pool. */
        Delayer JDK = (millis, task) ->
                CompletableFuture.delayedExecutor(millis, TimeUnit.MILLISECONDS).execute(task);

        void after(long millis, Runnable task);
    }
}
