package dev.throttle.testing;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * Waits for what a background task (a store's health probe) is to have done, polling briefly, and
 * fails naming what did not happen. Never a fixed sleep.
 */
public final class Eventually {

    private static final Duration LIMIT = Duration.ofSeconds(10);

    private Eventually() {}

    /**
     * Returns once {@code condition} holds; fails after ten seconds.
     * @param what what the condition says, for the failure message
     * @param condition the condition
     */
    public static void until(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + LIMIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("not within " + LIMIT.toSeconds() + " s: " + what);
            }
            try {
                Thread.sleep(1);
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting: " + what, ex);
            }
        }
    }
}
