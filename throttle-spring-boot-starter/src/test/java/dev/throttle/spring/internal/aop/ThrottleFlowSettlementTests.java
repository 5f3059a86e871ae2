package dev.throttle.spring.internal.aop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.LockoutPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.admission.Admission;
import dev.throttle.spring.admission.Charge;
import dev.throttle.spring.admission.PolicyDecision;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import reactor.core.publisher.Mono;

/**
 * How the call flow settles: a refund hands back the call's own
 * decision, so it gives back exactly what that call took, on the blocking and the reactive path; a
 * reset on success is told to the request as the reset state, so that the response's headers
 * describe the state after the call settled.
 */
class ThrottleFlowSettlementTests {

    private final ManualTimeSource clock = new ManualTimeSource();

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(ThrottleAutoConfiguration.class))
            .withBean(TimeSource.class, () -> this.clock)
            .withBean(Attempts.class)
            .withPropertyValues(
                    "throttle.policies.log.algorithm=sliding-log",
                    "throttle.policies.log.threshold=3",
                    "throttle.policies.log.ttl=1m",
                    "throttle.policies.log.count=failures",
                    "throttle.policies.window.algorithm=fixed-window",
                    "throttle.policies.window.limit=2",
                    "throttle.policies.window.window=10s",
                    "throttle.policies.window.count=failures");

    /** A success refunds its own attempt, not the failure made while it ran (the newest). */
    @Test
    void aSuccessfulCallRefundsItsOwnSlidingLogAttempt() {
        this.contextRunner.run((context) -> {
            Attempts attempts = context.getBean(Attempts.class);
            attempts.log("k", () -> {
                this.clock.advanceMillis(1_000);
                assertThatIllegalStateException().isThrownBy(() -> attempts.log("k", Attempts::fail));
            });
            assertThat(context.getBean(Throttler.class).peek("log", "k"))
                    .as("the failure's attempt, a minute to live")
                    .isEqualTo(Decision.allow(3, 2, 60_000));
        });
    }

    @Test
    void aSuccessfulReactiveCallRefundsItsOwnSlidingLogAttempt() {
        this.contextRunner.run((context) -> {
            Attempts attempts = context.getBean(Attempts.class);
            attempts.logLater("k", () -> {
                        this.clock.advanceMillis(1_000);
                        assertThatIllegalStateException().isThrownBy(() -> attempts.log("k", Attempts::fail));
                    })
                    .block();
            assertThat(context.getBean(Throttler.class).peek("log", "k")).isEqualTo(Decision.allow(3, 2, 60_000));
        });
    }

    /** The trace that exposed it, through an annotated method: three failures charged in a window of two. */
    @Test
    void aSuccessThatEndsInTheNextWindowFreesNothingOfIt() {
        this.contextRunner.run((context) -> {
            Attempts attempts = context.getBean(Attempts.class);
            attempts.window("k", () -> {
                this.clock.advanceMillis(10_000);
                assertThatIllegalStateException().isThrownBy(() -> attempts.window("k", Attempts::fail));
                assertThatIllegalStateException().isThrownBy(() -> attempts.window("k", Attempts::fail));
            });
            assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> attempts.window("k", Attempts::fail));
        });
    }

    @Test
    void aPolicyResetOnSuccessIsToldToTheRequestAsItsResetState() {
        Charge login = throttle(LockoutPolicy.of("login", List.of(Duration.ofSeconds(1))), true, false);
        Recording request = new Recording();
        Admission admission = request.admit(List.of(login), new String[] {"k"});
        assertThat(request.told).containsExactly(List.of(new PolicyDecision(login.policy(), admission.decision(0))));
        request.succeeded(admission);
        assertThat(request.told).hasSize(2);
        assertThat(request.told.get(1))
                .singleElement()
                .satisfies((state) -> assertThat(state.decision()).isEqualTo(Decision.allow(1, 1, 0)))
                .satisfies((state) ->
                        assertThat(state.decision().nextUnitAfterMillis()).isZero());
    }

    @Test
    void theReactiveSettlementTellsTheResetStateOnceEveryResetIsDone() {
        Charge login = throttle(LockoutPolicy.of("login", List.of(Duration.ofSeconds(1))), true, false);
        Charge window = throttle(new FixedWindowPolicy("window", 2, Duration.ofSeconds(10)), false, true);
        Recording request = new Recording();
        String[] keys = {"k", "k"};
        Admission admission = request.admitAsync(List.of(login, window), keys)
                .toCompletableFuture()
                .join();
        request.succeededAsync(admission).toCompletableFuture().join();
        assertThat(request.told).hasSize(2);
        assertThat(request.told.get(1))
                .singleElement()
                .satisfies((state) -> assertThat(state.policy().name()).isEqualTo("login"))
                .satisfies((state) -> assertThat(state.decision()).isEqualTo(Decision.allow(1, 1, 0)));
        assertThat(window.bound().peek("k")).as("refunded by its receipt").isEqualTo(Decision.allow(2, 2, 0));
    }

    @Test
    void aRefusalGivesBackWhatEachEarlierPolicyTookByItsOwnDecision() {
        Charge log = throttle(
                new SlidingLogPolicy("log", 3, Duration.ofMinutes(1), Duration.ofSeconds(10), 1), false, false);
        Charge none = throttle(new FixedWindowPolicy("none", 1, Duration.ofMinutes(1)), false, false);
        none.bound().tryAcquire("k", 1);
        log.bound().tryAcquire("k", 1);
        this.clock.advanceMillis(1_000);
        assertThatExceptionOfType(ThrottledException.class)
                .isThrownBy(() -> new Recording().admit(List.of(log, none), new String[] {"k", "k"}));
        assertThat(log.bound().peek("k"))
                .as("the earlier attempt stands, the refused call's is gone")
                .isEqualTo(Decision.allow(3, 2, 59_000));
    }

    private Charge throttle(dev.throttle.Policy policy, boolean resetOnSuccess, boolean refundOnSuccess) {
        Throttler throttler = new Throttler(new MemoryThrottleStore(this.clock, 100), List.of(policy));
        return Charge.of(
                throttler.bound(policy.name()),
                resetOnSuccess
                        ? Charge.OnSuccess.RESET
                        : refundOnSuccess ? Charge.OnSuccess.REFUND : Charge.OnSuccess.COUNT);
    }

    private static final class Recording implements ThrottleRequestContext {

        private final List<List<PolicyDecision>> told = new ArrayList<>();

        @Override
        public void allowed(List<PolicyDecision> decisions) {
            this.told.add(List.copyOf(decisions));
        }
    }

    static class Attempts {

        static void fail() {
            throw new IllegalStateException("a failed attempt");
        }

        @Throttled(policy = "log", key = "#user")
        String log(String user, Runnable during) {
            during.run();
            return user;
        }

        @Throttled(policy = "log", key = "#user")
        Mono<String> logLater(String user, Runnable during) {
            return Mono.fromCallable(() -> {
                during.run();
                return user;
            });
        }

        @Throttled(policy = "window", key = "#user")
        String window(String user, Runnable during) {
            during.run();
            return user;
        }
    }
}
