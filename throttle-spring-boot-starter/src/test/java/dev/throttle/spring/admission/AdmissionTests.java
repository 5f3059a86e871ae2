package dev.throttle.spring.admission;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.LockoutPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

/**
 * One call decided once and settled once through what its decision returned.
 */
class AdmissionTests {

    private final Throttler throttler = new Throttler(
            new MemoryThrottleStore(new ManualTimeSource(), 100),
            List.of(
                    new FixedWindowPolicy("one", 1, Duration.ofMinutes(1)),
                    new FixedWindowPolicy("two", 2, Duration.ofMinutes(1)),
                    LockoutPolicy.of("login", List.of(Duration.ofMinutes(1)))));

    @Test
    void aRefusalWithoutBlockingGivesBackWhatTheEarlierPoliciesTook() {
        Charge two = Charge.of(this.throttler.bound("two"), Charge.OnSuccess.COUNT);
        Charge one = Charge.of(this.throttler.bound("one"), Charge.OnSuccess.COUNT);
        Admission.decide(one, "k");
        assertThatExceptionOfType(CompletionException.class)
                .isThrownBy(() -> Admission.decideAsync(List.of(two, one), new String[] {"k", "k"})
                        .toCompletableFuture()
                        .join())
                .havingCause()
                .isInstanceOfSatisfying(
                        ThrottledException.class,
                        (refusal) -> assertThat(refusal.getPolicy().name()).isEqualTo("one"));
        assertThat(this.throttler.peek("two", "k").remaining()).isEqualTo(2);
    }

    @Test
    void aCallThatWaitsReservesItsTurnAndSaysHowLongUntilIt() {
        Charge two =
                Charge.of(this.throttler.bound("two"), Charge.OnSuccess.COUNT).withWait(Duration.ofMinutes(2));
        assertThat(Admission.decide(two, "k").waitMillis()).isZero();
        assertThat(Admission.decide(two, "k").waitMillis()).isZero();
        Admission waiting = Admission.decide(two, "k");
        assertThat(waiting.decision(0).waitMillis())
                .as("the next window's turn")
                .isEqualTo(60_000);
        assertThat(waiting.untilTurn()).isBetween(Duration.ofSeconds(59), Duration.ofMinutes(1));
        waiting.refund();
        assertThat(Admission.decide(two, "k").decision(0).waitMillis())
                .as("the turn given back is the next caller's")
                .isEqualTo(60_000);
    }

    @Test
    void aRefusalByALaterPolicyGivesBackTheTurnAnEarlierOneReserved() {
        Charge two =
                Charge.of(this.throttler.bound("two"), Charge.OnSuccess.COUNT).withWait(Duration.ofMinutes(2));
        Charge one = Charge.of(this.throttler.bound("one"), Charge.OnSuccess.COUNT);
        Admission.decide(two, "k");
        Admission.decide(two, "k");
        Admission.decide(one, "k");
        assertThatExceptionOfType(ThrottledException.class)
                .isThrownBy(() -> Admission.decide(List.of(two, one), new String[] {"k", "k"}))
                .satisfies((refusal) -> assertThat(refusal.getPolicy().name()).isEqualTo("one"));
        Admission next = Admission.decide(two, "k");
        assertThat(next.decision(0).waitMillis())
                .as("the reserved turn went back")
                .isEqualTo(60_000);
        assertThat(this.throttler.peek("two", "k").retryAfterMillis()).isEqualTo(60_000);
    }

    @Test
    void aChargeOnAPolicyThatCannotWaitRefusesAWait() {
        Charge login = Charge.of(this.throttler.bound("login"), Charge.OnSuccess.RESET);
        org.assertj.core.api.Assertions.assertThatIllegalArgumentException()
                .isThrownBy(() -> login.withWait(Duration.ofSeconds(1)))
                .withMessageContaining("a lockout that can be waited out protects nothing");
    }

    @Test
    void aShadowPolicyLetsTheCallThroughAndGivesBackNothingItDidNotTake() {
        Charge shadow = Charge.of(this.throttler.bound("one"), 1, Charge.OnSuccess.REFUND, () -> true);
        Admission first = Admission.decide(shadow, "k");
        Admission second = Admission.decide(shadow, "k");
        assertThat(second.decision(0).allowed())
                .as("what it would have refused")
                .isFalse();
        second.succeeded();
        assertThat(this.throttler.peek("one", "k").remaining()).isZero();
        first.succeeded();
        assertThat(this.throttler.peek("one", "k").remaining()).isEqualTo(1);
    }

    @Test
    void aSuccessThatResetsTheKeySaysSo() {
        Charge login = Charge.of(this.throttler.bound("login"), Charge.OnSuccess.RESET);
        Admission admission = Admission.decide(login, "alice");
        assertThat(admission.wasReset(0)).isFalse();
        admission.succeededAsync().toCompletableFuture().join();
        assertThat(admission.wasReset(0)).isTrue();
        assertThat(login.neutral()).isEqualTo(Decision.allow(1, 1, 0));
        assertThat(Admission.decide(login, "alice").decision(0).allowed()).isTrue();
    }

    @Test
    void aFailedCallKeepsWhatItTookAndCannotBeRefundedAfterwards() {
        Charge two = Charge.of(this.throttler.bound("two"), Charge.OnSuccess.REFUND);
        Admission admission = Admission.decide(two, "k");
        admission.failed();
        admission.refund();
        admission.succeeded();
        assertThat(admission.isSettled()).isTrue();
        assertThat(this.throttler.peek("two", "k").remaining()).isEqualTo(1);
    }

    @Test
    void aCallThatDidNotRunGetsBackEverythingItTook() {
        Charge two = Charge.of(this.throttler.bound("two"), Charge.OnSuccess.COUNT);
        Charge one = Charge.of(this.throttler.bound("one"), Charge.OnSuccess.COUNT);
        Admission.decide(List.of(two, one), new String[] {"k", "k"})
                .refundAsync()
                .toCompletableFuture()
                .join();
        assertThat(this.throttler.peek("two", "k").remaining()).isEqualTo(2);
        assertThat(this.throttler.peek("one", "k").remaining()).isEqualTo(1);
    }

    @Test
    void aPlanOrCostChosenPerCallIsANewChargeAndTheSameOneOtherwise() {
        Charge two = Charge.of(this.throttler.bound("two"), Charge.OnSuccess.COUNT);
        assertThat(two.choose(null, 1)).isSameAs(two);
        assertThat(two.choose(null, 2).cost()).isEqualTo(2);
        assertThatIllegalArgumentException().isThrownBy(() -> two.choose(null, 0));
    }

    @Test
    void eachChargeNeedsItsKey() {
        Charge two = Charge.of(this.throttler.bound("two"), Charge.OnSuccess.COUNT);
        assertThatIllegalArgumentException().isThrownBy(() -> Admission.decide(List.of(two, two), new String[] {"k"}));
    }

    @Test
    void theAdmissionsDecideByPolicyNameAndSettleAsThePolicyIsConfigured() {
        Admissions admissions = new Admissions(
                this.throttler, (name) -> name.equals("one") ? Charge.OnSuccess.REFUND : null, (name) -> () -> false);
        admissions.decide("one", "k").succeeded();
        admissions.decideAsync("one", "k").toCompletableFuture().join().succeeded();
        assertThat(this.throttler.peek("one", "k").remaining())
                .as("only failures count")
                .isEqualTo(1);
        admissions.decide("two", "k").succeeded();
        assertThat(this.throttler.peek("two", "k").remaining())
                .as("every call counts")
                .isEqualTo(1);
        assertThatIllegalArgumentException().isThrownBy(() -> admissions.decide("nope", "k"));
    }

    @Test
    void anAdmissionOfNothingSettlesNothing() {
        Admission none = Admission.none();
        none.succeeded();
        assertThat(none.size()).isZero();
        assertThat(none.isSettled()).isFalse();
    }
}
