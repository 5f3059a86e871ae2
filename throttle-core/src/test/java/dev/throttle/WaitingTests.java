package dev.throttle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.testing.Eventually;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link Throttler#acquire} and {@link Throttler#acquireAsync}: a call over the limit waits for the
 * turn its store reserved (decided on the manual clock; the wait itself is real time, kept short),
 * and a waiter that gives up gives its turn back.
 */
class WaitingTests {

    /** One call per 10 s: a second call's turn is 10 s away, which no test waits out. */
    private static final GcraPolicy SLOW = new GcraPolicy("slow", 1, Duration.ofSeconds(10));

    /** One call per 150 ms: a second call's turn comes soon. */
    private static final GcraPolicy QUICK = new GcraPolicy("quick", 1, Duration.ofMillis(150));

    private final ManualTimeSource clock = new ManualTimeSource();

    private final MemoryThrottleStore store = new MemoryThrottleStore(this.clock, 100);

    private final Throttler throttler =
            new Throttler(this.store, List.of(SLOW, QUICK, SlidingLogPolicy.withDefaults("log")));

    @AfterEach
    void closeStore() {
        this.store.close();
    }

    @Test
    void aCallOverTheLimitSleepsUntilItsTurnThenProceeds() {
        assertThat(this.throttler
                        .acquire("quick", "k", 1, Duration.ofSeconds(1))
                        .waitMillis())
                .isZero();
        long start = System.nanoTime();
        Decision decision = this.throttler.acquire("quick", "k", 1, Duration.ofSeconds(1));
        assertThat(decision.allowed()).isTrue();
        assertThat(decision.waitMillis()).isEqualTo(150);
        assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(150));
    }

    @Test
    void aTurnBeyondTheWaitIsRefusedAtOnceWithTheTruthAndTakesNothing() {
        this.throttler.acquire("slow", "k", 1, Duration.ofSeconds(1));
        long start = System.nanoTime();
        assertThatExceptionOfType(ThrottledException.class)
                .isThrownBy(() -> this.throttler.acquire("slow", "k", 1, Duration.ofSeconds(9)))
                .satisfies((refused) ->
                        assertThat(refused.getDecision().retryAfterMillis()).isEqualTo(10_000));
        assertThat(System.nanoTime() - start).as("no useless wait").isLessThan(TimeUnit.SECONDS.toNanos(5));
        assertThat(this.throttler
                        .bound("slow")
                        .reserve("k", 1, Duration.ofSeconds(10))
                        .waitMillis())
                .isEqualTo(10_000);
    }

    @Test
    void anInterruptedWaiterGivesItsTurnBackKeepsItsInterruptAndIsRefused() throws Exception {
        this.throttler.acquire("slow", "k", 1, Duration.ZERO);
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        AtomicReference<Boolean> interrupted = new AtomicReference<>();
        Thread waiter = new Thread(() -> {
            try {
                this.throttler.acquire("slow", "k", 1, Duration.ofSeconds(30));
            } catch (RuntimeException ex) {
                thrown.set(ex);
            }
            interrupted.set(Thread.currentThread().isInterrupted());
        });
        waiter.start();
        Eventually.until(
                "the waiter reserved its turn",
                () -> this.throttler.peek("slow", "k").retryAfterMillis() > 10_000);
        waiter.interrupt();
        waiter.join(5_000);
        assertThat(thrown.get()).isInstanceOf(ThrottledException.class);
        assertThat(interrupted.get()).isTrue();
        assertThat(this.throttler
                        .bound("slow")
                        .reserve("k", 1, Duration.ofSeconds(30))
                        .waitMillis())
                .as("the next caller gets the turn the waiter gave up")
                .isEqualTo(10_000);
    }

    @Test
    void theNonBlockingFormCompletesWhenTheTurnComesWithoutHoldingAThread() throws Exception {
        this.throttler.acquire("quick", "k", 1, Duration.ZERO);
        long start = System.nanoTime();
        CompletableFuture<Decision> turn = this.throttler
                .acquireAsync("quick", "k", 1, Duration.ofSeconds(1))
                .toCompletableFuture();
        assertThat(System.nanoTime() - start)
                .as("returns before the turn")
                .isLessThan(TimeUnit.MILLISECONDS.toNanos(150));
        assertThat(turn.get(5, TimeUnit.SECONDS).waitMillis()).isEqualTo(150);
        assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(150));
    }

    @Test
    void cancellingTheNonBlockingFormGivesTheTurnBack() {
        this.throttler.acquire("slow", "k", 1, Duration.ZERO);
        CompletableFuture<Decision> turn = this.throttler
                .acquireAsync("slow", "k", 1, Duration.ofSeconds(30))
                .toCompletableFuture();
        Eventually.until(
                "the waiter reserved its turn",
                () -> this.throttler.peek("slow", "k").retryAfterMillis() > 10_000);
        turn.cancel(true);
        Eventually.until(
                "the turn is back", () -> this.throttler.peek("slow", "k").retryAfterMillis() == 10_000);
        assertThat(this.throttler
                        .bound("slow")
                        .reserve("k", 1, Duration.ofSeconds(30))
                        .waitMillis())
                .isEqualTo(10_000);
    }

    @Test
    void theNonBlockingFormIsRefusedWithAThrottledException() {
        this.throttler.acquire("slow", "k", 1, Duration.ZERO);
        CompletableFuture<Decision> refused = this.throttler
                .acquireAsync("slow", "k", 1, Duration.ofSeconds(1))
                .toCompletableFuture();
        assertThatExceptionOfType(ExecutionException.class)
                .isThrownBy(() -> refused.get(5, TimeUnit.SECONDS))
                .withCauseInstanceOf(ThrottledException.class);
    }

    @Test
    void aPolicyThatCannotWaitSaysWhy() {
        org.assertj.core.api.Assertions.assertThatIllegalArgumentException()
                .isThrownBy(() -> this.throttler.acquire("log", "k", 1, Duration.ofSeconds(1)))
                .withMessageContaining("policy 'log' cannot wait")
                .withMessageContaining("protects nothing");
    }
}
