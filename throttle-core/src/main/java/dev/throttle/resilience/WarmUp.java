package dev.throttle.resilience;

import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.ThrottleStore;
import dev.throttle.Throttler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs every policy's whole decision path against a store before the first real call, so that the
 * first calls after startup do not pay for what a cold JVM does once (loading classes, a client's
 * first command, a script's first load, a scheduler's first timer) and miss the store's timeout.
 *
 * <p>In rounds, on a key that no caller can have ({@link #KEY}, longer than any key a
 * {@link Throttler} hands a store): for each policy take a unit and refund it, peek, the same without
 * blocking, then reset the key. Done after {@value #ROUNDS} rounds in a row in which the store
 * answered every call within its own bound; given up at the first failure that is not a timeout
 * (the store refused: asking again would only delay the start) or at the warm-up's bound. Straight
 * to the store, never through the failure policy: a slow first call here is what the warm-up is for,
 * not an outage, and a warm-up call is no decision that a listener or a metric should hear of.
 */
final class WarmUp {

    /** Rounds in a row that must be answered in full. */
    static final int ROUNDS = 3;

    /**
     * The key warmed on: longer than {@link Throttler#MAX_KEY_LENGTH}, so no caller's key can be it
     * (a longer key reaches a store as its digest).
     */
    static final String KEY = "throttle-warm-up:" + "-".repeat(Throttler.MAX_KEY_LENGTH + 1 - 17);

    private final List<Limiter> limiters = new ArrayList<>();

    WarmUp(ThrottleStore store, Collection<? extends Policy> policies) {
        for (Policy policy : policies) {
            this.limiters.add(store.limiter(policy));
        }
    }

    /**
     * Warms up, for at most {@code bound} (plus one call's own bound).
     * @return null when warm; otherwise the last failure
     */
    RuntimeException run(Duration bound) {
        long deadline = System.nanoTime() + bound.toNanos();
        int answered = 0;
        RuntimeException last = null;
        while (answered < ROUNDS) {
            try {
                for (Limiter limiter : this.limiters) {
                    round(limiter, deadline);
                }
                answered++;
            } catch (RuntimeException ex) {
                answered = 0;
                last = ex;
                if (!StoreHealth.isTimeout(ex) || System.nanoTime() - deadline >= 0) {
                    return ex;
                }
            }
            if (answered < ROUNDS && System.nanoTime() - deadline >= 0) {
                return (last != null)
                        ? last
                        : new IllegalStateException("the store answered too slowly for " + ROUNDS + " rounds in a row");
            }
        }
        return null;
    }

    private static void round(Limiter limiter, long deadline) {
        Decision taken = limiter.tryAcquire(KEY, 1);
        if (taken.allowed()) {
            limiter.refund(KEY, 1, taken.receipt());
        }
        limiter.peek(KEY);
        Decision takenAsync = await(limiter.tryAcquireAsync(KEY, 1), deadline);
        if (takenAsync.allowed()) {
            await(limiter.refundAsync(KEY, 1, takenAsync.receipt()), deadline);
        }
        await(limiter.peekAsync(KEY), deadline);
        await(limiter.resetAsync(KEY), deadline);
        limiter.reset(KEY);
    }

    /** The store bounds its own calls; the warm-up's bound caps the wait for one that does not. */
    private static <T> T await(CompletionStage<T> call, long deadline) {
        try {
            return call.toCompletableFuture().get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (ExecutionException ex) {
            Throwable cause = ex.getCause();
            throw (cause instanceof RuntimeException runtime) ? runtime : new IllegalStateException(cause);
        } catch (TimeoutException ex) {
            throw new IllegalStateException("no answer within the warm-up's bound", ex);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", ex);
        }
    }
}
