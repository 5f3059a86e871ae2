package com.example.adapter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import dev.throttle.ManualTimeSource;
import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.spring.admission.Admission;
import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.admission.Charge;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * An entry point written outside the starter's packages, with its public types only, throttles
 * and settles as the starter's own entry points do.
 */
class ThrottledCallsTests {

    private final ManualTimeSource clock = new ManualTimeSource();

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(ThrottleAutoConfiguration.class))
            .withBean(TimeSource.class, () -> this.clock)
            .withPropertyValues(
                    "throttle.policies.two.algorithm=fixed-window",
                    "throttle.policies.two.limit=2",
                    "throttle.policies.two.window=1m",
                    "throttle.policies.login.algorithm=lockout",
                    "throttle.policies.login.timeouts=1m",
                    "throttle.policies.login.reset-on-success=true",
                    "throttle.policies.failures.algorithm=fixed-window",
                    "throttle.policies.failures.limit=1",
                    "throttle.policies.failures.window=1m",
                    "throttle.policies.failures.count=failures");

    @Test
    void aRefusedCallDoesNotRunAndThrowsTheRefusal() {
        this.contextRunner.run((context) -> {
            ThrottledCalls calls = new ThrottledCalls(context.getBean(Admissions.class), "two");
            AtomicInteger ran = new AtomicInteger();
            calls.call("k", ran::incrementAndGet);
            calls.call("k", ran::incrementAndGet);
            assertThatExceptionOfType(ThrottledException.class)
                    .isThrownBy(() -> calls.call("k", ran::incrementAndGet))
                    .satisfies((refusal) -> {
                        assertThat(refusal.getPolicy().name()).isEqualTo("two");
                        assertThat(refusal.getDecision().retryAfterMillis()).isEqualTo(60_000);
                    });
            assertThat(ran).hasValue(2);
            assertThat(calls.call("other", ran::incrementAndGet))
                    .as("another key has its own limit")
                    .isEqualTo(3);
        });
    }

    @Test
    void aSuccessResetsAPolicyThatResetsOnSuccess() {
        this.contextRunner.run((context) -> {
            ThrottledCalls calls = new ThrottledCalls(context.getBean(Admissions.class), "login");
            assertThat(calls.call("alice", () -> "welcome")).isEqualTo("welcome");
            assertThat(calls.call("alice", () -> "welcome again"))
                    .as("the success cleared the lockout")
                    .isEqualTo("welcome again");
            assertThatIllegalStateException().isThrownBy(() -> calls.call("alice", ThrottledCallsTests::wrongPassword));
            assertThatExceptionOfType(ThrottledException.class)
                    .as("a failure keeps what it took")
                    .isThrownBy(() -> calls.call("alice", () -> "too soon"));
        });
    }

    @Test
    void aSuccessGivesBackWhatItTookWhenOnlyFailuresCount() {
        this.contextRunner.run((context) -> {
            ThrottledCalls calls = new ThrottledCalls(context.getBean(Admissions.class), "failures");
            for (int i = 0; i < 5; i++) {
                calls.call("k", () -> "fine");
            }
            assertThatIllegalStateException().isThrownBy(() -> calls.call("k", ThrottledCallsTests::wrongPassword));
            assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> calls.call("k", () -> "fine"));
        });
    }

    @Test
    void aLaterPolicyThatRefusesGivesBackWhatTheEarlierOnesTook() {
        this.contextRunner.run((context) -> {
            ThrottledCalls calls = new ThrottledCalls(context.getBean(Admissions.class), "two", "failures");
            assertThatIllegalStateException().isThrownBy(() -> calls.call("k", ThrottledCallsTests::wrongPassword));
            assertThatExceptionOfType(ThrottledException.class)
                    .isThrownBy(() -> calls.call("k", () -> "refused"))
                    .satisfies(
                            (refusal) -> assertThat(refusal.getPolicy().name()).isEqualTo("failures"));
            assertThat(context.getBean(Throttler.class).peek("two", "k").remaining())
                    .as("only the first call's unit is used up")
                    .isEqualTo(1);
        });
    }

    @Test
    void theNonBlockingFormSettlesWhenTheCallsStageCompletes() {
        this.contextRunner.run((context) -> {
            ThrottledCalls calls = new ThrottledCalls(context.getBean(Admissions.class), "failures");
            for (int i = 0; i < 3; i++) {
                assertThat(calls.callAsync("k", () -> CompletableFuture.completedStage("fine"))
                                .toCompletableFuture()
                                .join())
                        .isEqualTo("fine");
            }
            assertThatExceptionOfType(CompletionException.class)
                    .isThrownBy(
                            () -> calls.callAsync("k", () -> CompletableFuture.failedStage(new IllegalStateException()))
                                    .toCompletableFuture()
                                    .join());
            assertThatExceptionOfType(CompletionException.class)
                    .isThrownBy(() -> calls.callAsync("k", () -> CompletableFuture.completedStage("fine"))
                            .toCompletableFuture()
                            .join())
                    .withCauseInstanceOf(ThrottledException.class);
        });
    }

    @Test
    void anAdmissionSettlesOnceHoweverOftenItIsEnded() {
        this.contextRunner.run((context) -> {
            Charge charge = context.getBean(Admissions.class).charge("failures");
            Admission first = Admission.decide(charge, "k");
            first.succeeded();
            first.succeeded();
            Admission second = Admission.decide(charge, "k");
            first.refund();
            assertThat(first.isSettled()).isTrue();
            assertThatExceptionOfType(ThrottledException.class)
                    .as("the second call still holds the one unit")
                    .isThrownBy(() -> Admission.decide(charge, "k"));
            second.refund();
            assertThat(remaining(context, "failures")).isEqualTo(1);
        });
    }

    /** Built at run time: a constant would be folded into this class's own constant pool. */
    private static final String INTERNAL = String.join("/", "dev", "throttle", "spring", "internal");

    @Test
    void theAdapterNeedsNothingInternal() throws Exception {
        // read from the compiled classes, whose constant pools name every type they use, so that the
        // check holds wherever these tests run (the Boot 4.0 module runs them from the test-jar)
        List<Class<?>> types = new ArrayList<>(List.of(ThrottledCalls.class, ThrottledCallsTests.class));
        types.addAll(List.of(ThrottledCalls.class.getDeclaredClasses()));
        for (Class<?> type : types) {
            String resource = type.getName().replace('.', '/') + ".class";
            try (InputStream in = type.getClassLoader().getResourceAsStream(resource)) {
                assertThat(in).as(resource).isNotNull();
                String names = new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
                assertThat(names).as(resource).doesNotContain(INTERNAL);
            }
        }
    }

    private static int remaining(AssertableApplicationContext context, String policy) {
        return context.getBean(Throttler.class).peek(policy, "k").remaining();
    }

    private static String wrongPassword() {
        throw new IllegalStateException("wrong password");
    }
}
