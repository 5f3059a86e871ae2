package dev.throttle.spring.internal.aop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.annotation.Throttled;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * {@code @Throttled(actualCost)}: the estimate is taken before the call, and what the call returned
 * settles the difference, for every return type whose value can be read; a call that cost more than
 * was left puts the key into debt, bounded by {@code max-debt}. Wrong configuration fails the start.
 */
class ActualCostTests {

    private static final String[] EXPORT = {
        "throttle.policies.export.algorithm=token-bucket",
        "throttle.policies.export.capacity=100",
        "throttle.policies.export.refill-period=1h"
    };

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withUserConfiguration(Application.class)
            .withPropertyValues(EXPORT);

    private static int remaining(AssertableApplicationContext context) {
        return context.getBean(Throttler.class).peek("export", "k").remaining();
    }

    @Test
    void aCallerThatCancelsOrTimesOutTheFutureItGotStillPaysWhatTheWorkCost() {
        this.contextRunner.run((context) -> {
            Exports exports = context.getBean(Exports.class);
            CompletableFuture<List<String>> got = exports.pending();
            assertThat(got).isNotSameAs(exports.work());
            got.cancel(false);
            // what a timeout of the caller's own (orTimeout, Spring MVC's async timeout) does to it
            exports.pending().completeExceptionally(new java.util.concurrent.TimeoutException());
            assertThat(remaining(context)).as("two estimates of 1").isEqualTo(98);
            exports.work().complete(Collections.nCopies(50, "row"));
            assertThat(remaining(context))
                    .as("both calls settled by the work's outcome, not skipped by the callers' own ends")
                    .isEqualTo(0);
        });
    }

    @Test
    void aValueSettlesTheEstimateToWhatTheCallCost() {
        this.contextRunner.run((context) -> {
            Exports exports = context.getBean(Exports.class);
            assertThat(exports.rows(10)).hasSize(10);
            assertThat(remaining(context)).as("estimate 1, settled to 10").isEqualTo(90);
            assertThat(exports.rows(0)).isEmpty();
            assertThat(remaining(context))
                    .as("a call that returned nothing costs nothing")
                    .isEqualTo(90);
        });
    }

    @Test
    void aResponseEntityAnOptionalAndAStageAreReadThroughToTheirValue() {
        this.contextRunner.run((context) -> {
            Exports exports = context.getBean(Exports.class);
            exports.entity(5, HttpStatus.OK);
            assertThat(remaining(context)).isEqualTo(95);
            exports.entity(7, HttpStatus.BAD_REQUEST);
            assertThat(remaining(context))
                    .as("a failed call settles what its body says")
                    .isEqualTo(88);
            exports.optional(3);
            assertThat(remaining(context)).isEqualTo(85);
            exports.optional(-1);
            assertThat(remaining(context))
                    .as("an empty Optional is nothing to read: the estimate stands")
                    .isEqualTo(84);
            exports.stage(6).toCompletableFuture().join();
            assertThat(remaining(context)).isEqualTo(78);
        });
    }

    @Test
    void aMonoSettlesOnItsValueAndAFluxOnTheSumOfItsElements() {
        this.contextRunner.run((context) -> {
            Exports exports = context.getBean(Exports.class);
            assertThat(exports.mono(4).block()).hasSize(4);
            assertThat(remaining(context)).isEqualTo(96);
            assertThat(exports.flux(1, 2, 3).collectList().block()).containsExactly(1, 2, 3);
            assertThat(remaining(context))
                    .as("1 + 2 + 3, settled when the stream completed")
                    .isEqualTo(90);
            assertThat(exports.flux(5, 5, 5, 5).take(2).collectList().block()).hasSize(2);
            assertThat(remaining(context))
                    .as("a cancelled stream is settled to what it emitted")
                    .isEqualTo(80);
            assertThatIllegalStateException()
                    .isThrownBy(() -> exports.failingFlux(2, 3).collectList().block());
            assertThat(remaining(context))
                    .as("a stream that failed is settled to what it emitted")
                    .isEqualTo(75);
        });
    }

    @Test
    void aCallThatThrowsKeepsItsEstimate() {
        this.contextRunner.run((context) -> {
            Exports exports = context.getBean(Exports.class);
            assertThatIllegalStateException().isThrownBy(() -> exports.failing(50));
            assertThat(remaining(context)).isEqualTo(99);
        });
    }

    @Test
    void aCallThatCostMoreThanWasLeftPutsTheKeyIntoDebtUntilRefillsPayIt() {
        this.contextRunner
                .withPropertyValues("throttle.policies.export.max-debt=20")
                .run((context) -> {
                    Exports exports = context.getBean(Exports.class);
                    exports.rows(500);
                    assertThatExceptionOfType(ThrottledException.class)
                            .isThrownBy(() -> exports.rows(1))
                            .satisfies((refused) -> assertThat(
                                            refused.getDecision().retryAfterMillis())
                                    .as("21 refills of an hour (less the time since the first call): the"
                                            + " debt of 20 and the call's own token")
                                    .isGreaterThan(20 * 3_600_000L)
                                    .isLessThanOrEqualTo(21 * 3_600_000L));
                });
    }

    @Test
    void anActualCostOnAPolicyThatCannotCarryADebtFailsTheStart() {
        new ApplicationContextRunner()
                .withUserConfiguration(Locked.class)
                .withPropertyValues("throttle.policies.lock.algorithm=lockout", "throttle.policies.lock.timeouts=1s,1m")
                .run((context) -> assertThat(failure(context).getMessage())
                        .contains("has actualCost \"#result.size()\"")
                        .contains("cannot take a cost known after the call")
                        .contains("cannot carry a debt"));
    }

    @Test
    void anActualCostNamingNothingFailsTheStart() {
        new ApplicationContextRunner()
                .withUserConfiguration(Misnamed.class)
                .withPropertyValues(EXPORT)
                .run((context) -> assertThat(failure(context).getMessage())
                        .contains("the actualCost expression '#rows.size()'")
                        .contains("names #rows"));
    }

    @Test
    void aMaxDebtIsCheckedAtStartup() {
        this.contextRunner
                .withPropertyValues("throttle.policies.export.max-debt=-1")
                .run((context) -> assertThat(failure(context).getMessage())
                        .contains("throttle.policies.export.max-debt must not be negative, was -1"));
    }

    private static Throwable failure(AssertableApplicationContext context) {
        assertThat(context).hasFailed();
        Throwable failure = context.getStartupFailure();
        while (!(failure instanceof ThrottleConfigurationException) && failure.getCause() != null) {
            failure = failure.getCause();
        }
        return failure;
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class Application {

        @Bean
        Exports exports() {
            return new Exports();
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class Misnamed {

        @Bean
        MisnamedExports exports() {
            return new MisnamedExports();
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class Locked {

        @Bean
        LockedExports exports() {
            return new LockedExports();
        }
    }

    static class LockedExports {

        @Throttled(policy = "lock", key = "'k'", actualCost = "#result.size()")
        public List<String> rows(int count) {
            return Collections.nCopies(count, "row");
        }
    }

    static class Exports {

        @Throttled(policy = "export", key = "'k'", actualCost = "#result.size()")
        public List<String> rows(int rows) {
            return Collections.nCopies(rows, "row");
        }

        @Throttled(policy = "export", key = "'k'", actualCost = "#result.size()")
        public ResponseEntity<List<String>> entity(int rows, HttpStatus status) {
            return ResponseEntity.status(status).body(Collections.nCopies(rows, "row"));
        }

        @Throttled(policy = "export", key = "'k'", actualCost = "#result.size()")
        public Optional<List<String>> optional(int rows) {
            return (rows < 0) ? Optional.empty() : Optional.of(Collections.nCopies(rows, "row"));
        }

        @Throttled(policy = "export", key = "'k'", actualCost = "#result.size()")
        public CompletionStage<List<String>> stage(int rows) {
            return CompletableFuture.supplyAsync(() -> Collections.nCopies(rows, "row"));
        }

        /** The work of {@link #pending()}, which the test completes. */
        private final CompletableFuture<List<String>> work = new CompletableFuture<>();

        /** Read through the bean's proxy, which holds no field of its own. */
        public CompletableFuture<List<String>> work() {
            return this.work;
        }

        @Throttled(policy = "export", key = "'k'", actualCost = "#result.size()")
        public CompletableFuture<List<String>> pending() {
            return this.work;
        }

        @Throttled(policy = "export", key = "'k'", actualCost = "#result.size()")
        public Mono<List<String>> mono(int rows) {
            return Mono.fromSupplier(() -> Collections.nCopies(rows, "row"));
        }

        @Throttled(policy = "export", key = "'k'", actualCost = "#result")
        public Flux<Integer> flux(Integer... costs) {
            return Flux.just(costs);
        }

        @Throttled(policy = "export", key = "'k'", actualCost = "#result")
        public Flux<Integer> failingFlux(Integer... costs) {
            return Flux.just(costs).concatWith(Flux.error(new IllegalStateException("the export broke off")));
        }

        @Throttled(policy = "export", key = "'k'", actualCost = "#result.size()")
        public List<String> failing(int rows) {
            throw new IllegalStateException("no export today");
        }
    }

    static class MisnamedExports {

        @Throttled(policy = "export", key = "'k'", actualCost = "#rows.size()")
        public List<String> rows(int count) {
            return Collections.nCopies(count, "row");
        }
    }
}
