package dev.throttle.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ConcurrencyPolicy;
import dev.throttle.Slot;
import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.admission.Admission;
import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.annotation.Throttled;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * A concurrency policy in {@code throttle.policies}: its numbers are checked at startup, naming the
 * property, and the programmatic forms hold a slot for exactly as long as a try-with-resources block.
 */
class ConcurrencyConfigurationTests {

    private static final String[] REPORTS = {
        "throttle.policies.reports.algorithm=concurrency",
        "throttle.policies.reports.limit=2",
        "throttle.policies.reports.lease=30s"
    };

    private final ApplicationContextRunner contextRunner =
            new ApplicationContextRunner().withUserConfiguration(Application.class);

    @Test
    void aConcurrencyPolicyIsBuiltFromLimitAndLease() {
        this.contextRunner
                .withPropertyValues(REPORTS)
                .run((context) -> assertThat(context.getBean(Throttler.class).policy("reports"))
                        .isEqualTo(new ConcurrencyPolicy("reports", 2, Duration.ofSeconds(30))));
    }

    @Test
    void aLeaseIsRequiredAndPositive() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.reports.algorithm=concurrency", "throttle.policies.reports.limit=2")
                .run((context) -> assertThat(failure(context).getMessage())
                        .contains("throttle.policies.reports.lease is required"));
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.reports.algorithm=concurrency",
                        "throttle.policies.reports.limit=2",
                        "throttle.policies.reports.lease=0s")
                .run((context) -> assertThat(failure(context).getMessage())
                        .contains("throttle.policies.reports.lease must be positive, was PT0S"));
    }

    @Test
    void aSlotIsReleasedWhenTheWorkEndsThoughItsCallerCancelledTheFutureItGot() {
        this.contextRunner
                .withPropertyValues(REPORTS)
                .withBean(PendingReports.class)
                .run((context) -> {
                    PendingReports reports = context.getBean(PendingReports.class);
                    Throttler throttler = context.getBean(Throttler.class);
                    reports.report().cancel(false);
                    reports.report().completeExceptionally(new TimeoutException("the caller's own timeout"));
                    assertThat(throttler.peek("reports", "k").remaining())
                            .as("both slots held while the work runs")
                            .isZero();
                    reports.work().complete("done");
                    assertThat(throttler.peek("reports", "k").remaining())
                            .as("released when the work ended, not at the end of the lease")
                            .isEqualTo(2);
                });
    }

    @Test
    void aPolicyWaitMakesACallWaitForTheSlotThatIsReleased() {
        this.contextRunner
                .withPropertyValues(REPORTS)
                .withPropertyValues("throttle.policies.reports.wait=10s")
                .run((context) -> {
                    Admissions admissions = context.getBean(Admissions.class);
                    Admission first = admissions.decide("reports", "k");
                    Admission second = admissions.decide("reports", "k");
                    CompletableFuture<Admission> third = CompletableFuture.supplyAsync(
                            () -> admissions.decide("reports", "k").awaitTurn());
                    Thread.sleep(200);
                    assertThat(third).as("both slots are in use").isNotDone();
                    first.close();
                    try (Admission waited = third.get(10, TimeUnit.SECONDS)) {
                        assertThat(waited.releasesAtEnd()).isTrue();
                        assertThat(context.getBean(Throttler.class)
                                        .peek("reports", "k")
                                        .remaining())
                                .isZero();
                    }
                    second.close();
                    assertThat(context.getBean(Throttler.class)
                                    .peek("reports", "k")
                                    .remaining())
                            .isEqualTo(2);
                });
    }

    @Test
    void programmaticCallersWaitForASlotWithEnter() {
        this.contextRunner.withPropertyValues(REPORTS).run((context) -> {
            Throttler throttler = context.getBean(Throttler.class);
            Slot first = throttler.enter("reports", "k");
            Slot second = throttler.enter("reports", "k");
            CompletableFuture<Slot> third =
                    CompletableFuture.supplyAsync(() -> throttler.enter("reports", "k", Duration.ofSeconds(10)));
            Thread.sleep(200);
            assertThat(third).isNotDone();
            second.close();
            try (Slot waited = third.get(10, TimeUnit.SECONDS)) {
                assertThat(waited.decision().allowed()).isTrue();
            }
            first.close();
            assertThat(throttler.peek("reports", "k").remaining()).isEqualTo(2);
        });
    }

    @Test
    void aPeriodOrAnotherAlgorithmsNumberIsRefusedByName() {
        this.contextRunner
                .withPropertyValues(REPORTS)
                .withPropertyValues("throttle.policies.reports.period=1m", "throttle.policies.reports.capacity=5")
                .run((context) -> assertThat(failure(context).getMessage())
                        .contains("throttle.policies.reports.period means nothing to the concurrency algorithm,"
                                + " which takes limit, lease")
                        .contains("throttle.policies.reports.capacity means nothing to the concurrency algorithm"));
    }

    @Test
    void resetOnSuccessAndCountAreRefusedSinceEveryEndReleasesTheSlot() {
        this.contextRunner
                .withPropertyValues(REPORTS)
                .withPropertyValues("throttle.policies.reports.reset-on-success=true")
                .run((context) -> assertThat(failure(context).getMessage())
                        .contains("throttle.policies.reports.reset-on-success means nothing to the concurrency"));
        this.contextRunner
                .withPropertyValues(REPORTS)
                .withPropertyValues("throttle.policies.reports.count=failures")
                .run((context) -> assertThat(failure(context).getMessage())
                        .contains("throttle.policies.reports.count means nothing to the concurrency"));
    }

    @Test
    void aMethodWhoseEndCannotBeSeenIsRefusedAtStartup() {
        this.contextRunner
                .withPropertyValues(REPORTS)
                .withBean(PlainFuture.class)
                .run((context) -> assertThat(failure(context).getMessage())
                        .contains("on PlainFuture.call() returns Future<String>, whose end the advisor cannot see"));
    }

    @Test
    void programmaticSlotsAreHeldForExactlyTheirBlock() {
        this.contextRunner.withPropertyValues(REPORTS).run((context) -> {
            Throttler throttler = context.getBean(Throttler.class);
            Admissions admissions = context.getBean(Admissions.class);
            try (Slot slot = throttler.enter("reports", "k");
                    Admission admission = admissions.decide("reports", "k")) {
                assertThat(slot.decision().remaining()).isEqualTo(1);
                assertThat(admission.releasesAtEnd()).isTrue();
                Assertions.assertThatThrownBy(() -> throttler.enter("reports", "k"))
                        .isInstanceOf(ThrottledException.class);
            }
            assertThat(throttler.peek("reports", "k").remaining()).isEqualTo(2);
            Admission succeeded = admissions.decide("reports", "k");
            succeeded.succeeded();
            succeeded.close();
            assertThat(throttler.peek("reports", "k").remaining())
                    .as("released once, by the success")
                    .isEqualTo(2);
        });
    }

    private static ThrottleConfigurationException failure(AssertableApplicationContext context) {
        assertThat(context).hasFailed();
        for (Throwable current = context.getStartupFailure(); current != null; current = current.getCause()) {
            if (current instanceof ThrottleConfigurationException found) {
                return found;
            }
        }
        throw new AssertionError("no ThrottleConfigurationException in", context.getStartupFailure());
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class Application {}

    static class PendingReports {

        /** The work of {@link #report()}, which the test completes. */
        private final CompletableFuture<String> work = new CompletableFuture<>();

        /** Read through the bean's proxy, which holds no field of its own. */
        public CompletableFuture<String> work() {
            return this.work;
        }

        @Throttled(policy = "reports", key = "'k'")
        public CompletableFuture<String> report() {
            return this.work;
        }
    }

    static class PlainFuture {

        @Throttled(policy = "reports")
        public Future<String> call() {
            return null;
        }
    }
}
