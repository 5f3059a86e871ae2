package dev.throttle.spring.admission;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ConcurrencyPolicy;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * A call that holds a concurrency slot releases it on every ending (success, failure, not run; each
 * blocking or not), once, whatever else its policies settle.
 */
@ExtendWith(OutputCaptureExtension.class)
class AdmissionSlotTests {

    private final Throttler throttler = new Throttler(
            new MemoryThrottleStore(new ManualTimeSource(), 100),
            List.of(
                    new ConcurrencyPolicy("admitted-slots", 1, Duration.ofSeconds(30)),
                    new FixedWindowPolicy("window", 10, Duration.ofMinutes(1))));

    private final Charge slots = Charge.of(this.throttler.bound("admitted-slots"), Charge.OnSuccess.COUNT);

    private final Charge window = Charge.of(this.throttler.bound("window"), Charge.OnSuccess.COUNT);

    private void assertEachEndingReleasesOnce(Consumer<Admission> ending) {
        Admission admission = Admission.decide(List.of(this.window, this.slots), new String[] {"k", "k"});
        assertThat(admission.releasesAtEnd()).isTrue();
        assertThat(SlotsInUse.of("admitted-slots")).isEqualTo(1);
        assertThat(this.throttler.peek("admitted-slots", "k").allowed()).isFalse();
        ending.accept(admission);
        ending.accept(admission);
        admission.close();
        assertThat(this.throttler.peek("admitted-slots", "k").remaining()).isEqualTo(1);
        assertThat(SlotsInUse.of("admitted-slots")).as("counted once").isZero();
    }

    @Test
    void aSuccessReleasesTheSlot() {
        assertEachEndingReleasesOnce(Admission::succeeded);
        assertEachEndingReleasesOnce(
                (admission) -> admission.succeededAsync().toCompletableFuture().join());
    }

    @Test
    void aFailureReleasesTheSlotAndKeepsWhatTheRatePolicyTook() {
        assertEachEndingReleasesOnce(Admission::failed);
        assertEachEndingReleasesOnce(
                (admission) -> admission.failedAsync().toCompletableFuture().join());
        assertThat(this.throttler.peek("window", "k").remaining()).isEqualTo(8);
    }

    @Test
    void aCallThatDidNotRunReleasesTheSlotAndGivesBackEverything() {
        assertEachEndingReleasesOnce(Admission::refund);
        assertEachEndingReleasesOnce(
                (admission) -> admission.refundAsync().toCompletableFuture().join());
        assertThat(this.throttler.peek("window", "k").remaining()).isEqualTo(10);
    }

    @Test
    void closingReleasesACallNotEndedYet() {
        assertEachEndingReleasesOnce(Admission::close);
    }

    /** Measured on the wall clock, which is what a call's duration is: a call of 20 ms against a 1 ms lease. */
    @Test
    void aCallThatOutlivesItsLeaseIsSaidOncePerPolicy(CapturedOutput output) throws InterruptedException {
        Throttler brief = new Throttler(
                new MemoryThrottleStore(new ManualTimeSource(), 100),
                List.of(new ConcurrencyPolicy("outlived-lease", 5, Duration.ofMillis(1))));
        Charge charge = Charge.of(brief.bound("outlived-lease"), Charge.OnSuccess.COUNT);
        for (int i = 0; i < 2; i++) {
            Admission admission = Admission.decide(charge, "k");
            Thread.sleep(20);
            admission.succeeded();
        }
        String said = "concurrency policy 'outlived-lease' ran longer than its lease";
        assertThat(output.getAll()).contains(said).doesNotContain("'k'");
        assertThat(output.getAll().split(said, -1)).as("said once").hasSize(2);
    }
}
