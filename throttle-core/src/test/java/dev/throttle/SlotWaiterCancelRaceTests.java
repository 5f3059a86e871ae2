package dev.throttle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.throttle.memory.MemoryThrottleStore;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * A waiter for a concurrency slot whose caller gives up at the very moment a release hands it the
 * slot: either the caller gets the slot (and releases it) or the slot goes back, never lost to both.
 * The same holds when a listener fails as the waiter is handed its slot.
 */
class SlotWaiterCancelRaceTests {

    private final MemoryThrottleStore store = new MemoryThrottleStore();

    private final Throttler throttler =
            new Throttler(this.store, List.of(new ConcurrencyPolicy("slots", 1, Duration.ofMinutes(10))));

    @Test
    void aWaiterCancelledAsAReleaseWakesItNeverLosesTheSlot() throws Exception {
        BoundPolicy slots = this.throttler.bound("slots");
        for (int round = 0; round < 200; round++) {
            // a waiter of the round before may still be retrying on its timer: it takes the slot and,
            // its caller gone, gives it back at once
            Decision first = slots.tryAcquire("k", 1);
            long free = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (!first.allowed() && System.nanoTime() < free) {
                Thread.onSpinWait();
                first = slots.tryAcquire("k", 1);
            }
            Decision held = first;
            assertThat(held.allowed())
                    .as("round %d starts with the slot free", round)
                    .isTrue();
            CompletableFuture<Decision> waiter =
                    slots.reserveAsync("k", 1, Duration.ofSeconds(10)).toCompletableFuture();
            CountDownLatch go = new CountDownLatch(1);
            Thread releasing = new Thread(() -> {
                await(go);
                slots.refund("k", 1, held);
            });
            Thread cancelling = new Thread(() -> {
                await(go);
                waiter.cancel(false);
            });
            releasing.start();
            cancelling.start();
            go.countDown();
            releasing.join();
            cancelling.join();
            if (!waiter.isCancelled()) {
                // the waiter got the slot before its caller gave up: the caller releases it
                slots.refund("k", 1, waiter.get(10, TimeUnit.SECONDS));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            boolean freed;
            while (!(freed = slots.peek("k").allowed()) && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertThat(freed)
                    .as("round %d: the slot is free again, not held by a waiter nobody releases", round)
                    .isTrue();
        }
    }

    @Test
    void aListenerThatFailsAsAWaiterGetsItsSlotFailsTheWaiterAndGivesTheSlotBack() throws Exception {
        AtomicBoolean failing = new AtomicBoolean();
        ThrottleListener failingListener = new ThrottleListener() {
            @Override
            public void onDecision(Policy policy, Decision decision, long storeNanos) {
                if (failing.get()) {
                    throw new IllegalStateException("listener down");
                }
            }
        };
        BoundPolicy slots = new Throttler(
                        new MemoryThrottleStore(),
                        List.of(new ConcurrencyPolicy("slots", 1, Duration.ofMinutes(10))),
                        List.of(failingListener))
                .bound("slots");
        Decision held = slots.tryAcquire("k", 1);
        CompletableFuture<Decision> waiter =
                slots.reserveAsync("k", 1, Duration.ofSeconds(10)).toCompletableFuture();
        failing.set(true);
        slots.refund("k", 1, held);

        assertThatThrownBy(() -> waiter.get(5, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .hasRootCauseMessage("listener down");
        failing.set(false);
        assertThat(slots.peek("k").allowed())
                .as("the slot the failed waiter took is free again")
                .isTrue();
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }
}
