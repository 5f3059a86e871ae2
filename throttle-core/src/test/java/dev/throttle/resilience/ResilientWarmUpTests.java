package dev.throttle.resilience;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.DecisionSource;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.Policy;
import dev.throttle.ThrottleListener;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.testing.Eventually;
import dev.throttle.testing.FlakyStore;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The first burst after startup is exact, on the failure policy around a {@link FlakyStore}: the warm-up runs every
 * policy's decision path against the store, blocking and not, on a key no caller can have, leaves
 * nothing behind and tells no listener; a store that refuses is not waited for, one that does not
 * answer is asked until the bound, and either way the failure mode answers from the first call.
 */
class ResilientWarmUpTests {

    private static final List<Policy> POLICIES = List.of(
            new FixedWindowPolicy("login", 3, Duration.ofHours(1)), new GcraPolicy("api", 10, Duration.ofMinutes(1)));

    private final ManualTimeSource clock = new ManualTimeSource();

    private final MemoryThrottleStore primary = new MemoryThrottleStore(this.clock, 100);

    private final RecordingStore recording = new RecordingStore(this.primary);

    private final FlakyStore flaky = new FlakyStore(this.recording, "flaky");

    private final ResilientThrottleStore store = new ResilientThrottleStore(
            this.flaky, FailureMode.LOCAL, new MemoryThrottleStore(this.clock, 100), this.clock);

    private final List<Object> heard = new CopyOnWriteArrayList<>();

    private final Throttler throttler = new Throttler(this.store, POLICIES, List.of(new ThrottleListener() {

        @Override
        public void onDecision(Policy policy, Decision decision, DecisionSource source, long storeNanos) {
            ResilientWarmUpTests.this.heard.add(source);
        }

        @Override
        public void onStoreError(Policy policy, RuntimeException error) {
            ResilientWarmUpTests.this.heard.add(error);
        }
    }));

    private final Logger log = Logger.getLogger(ResilientThrottleStore.class.getName());

    private final List<LogRecord> logs = new CopyOnWriteArrayList<>();

    private final Handler capture = new Handler() {

        @Override
        public void publish(LogRecord record) {
            ResilientWarmUpTests.this.logs.add(record);
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    };

    @BeforeEach
    void captureLogs() {
        this.log.addHandler(this.capture);
    }

    @AfterEach
    void stopCapturing() {
        this.log.removeHandler(this.capture);
        this.store.close();
    }

    @Test
    void theWarmUpRunsEveryPolicysPathBothWaysOnAKeyNoCallerCanHaveAndLeavesNothingBehind() {
        assertThat(this.store.warmUp(this.throttler.policies().values(), Duration.ofSeconds(10)))
                .isTrue();
        String key = WarmUp.KEY;
        assertThat(key).hasSizeGreaterThan(Throttler.MAX_KEY_LENGTH);
        // so a caller with that key reaches the store as its digest, never as the key itself
        // (ThrottlerTests.aKeyLongerThanTheLimitReachesTheStoreAsADigestWithinTheLimit)
        for (Policy policy : POLICIES) {
            String suffix = " " + policy.name() + " " + key;
            assertThat(this.recording.operations)
                    .as(policy.name())
                    .containsSubsequence(
                            "tryAcquire" + suffix,
                            "refund" + suffix,
                            "tryAcquireAsync" + suffix,
                            "refundAsync" + suffix,
                            "resetAsync" + suffix,
                            "reset" + suffix)
                    .filteredOn((operation) -> operation.startsWith("tryAcquire" + suffix))
                    .as("three rounds")
                    .hasSize(WarmUp.ROUNDS);
            assertThat(this.primary.limiter(policy).peek(key))
                    .as("no state left")
                    .isEqualTo(this.primary.limiter(policy).peek("never-used"));
        }
        assertThat(this.recording.operations)
                .allSatisfy((operation) -> assertThat(operation).endsWith(key));
        assertThat(this.heard).as("no decision, no store error").isEmpty();
        assertThat(this.store.isStoreDown()).isFalse();
        assertThat(this.logs).isEmpty();
    }

    @Test
    void aStoreThatRefusesIsNotWaitedForAndTheFailureModeAnswersFromTheFirstCall() {
        this.flaky.goDown();
        long start = System.nanoTime();
        assertThat(this.store.warmUp(this.throttler.policies().values(), Duration.ofSeconds(10)))
                .isFalse();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
        assertThat(this.store.isStoreDown()).isTrue();
        int asked = this.flaky.decisions();
        assertThat(this.throttler.tryAcquire("login", "alice").allowed()).isTrue();
        assertThat(this.flaky.decisions()).as("not asked: known to be down").isEqualTo(asked);
        assertThat(this.heard).hasSize(2).last().isEqualTo(DecisionSource.store("local"));
        assertThat(this.heard.get(0))
                .as("reported as every call the failure mode answers")
                .isInstanceOf(StoreUnavailableException.class);
        assertThat(this.logs).singleElement().satisfies((record) -> {
            assertThat(record.getLevel()).isEqualTo(Level.WARNING);
            assertThat(record.getMessage())
                    .matches("Throttle store 'flaky' failed \\(its warm-up failed after \\d+ ms: "
                            + "flaky store is down\\); failure-mode local applies until it answers again");
        });
        this.flaky.comeBack();
        // each call while it is down starts a probe unless one runs (one started while it was down may)
        Eventually.until("a call's probe ends it", () -> {
            this.throttler.tryAcquire("login", "bob");
            return !this.store.isStoreDown();
        });
    }

    @Test
    void aStoreThatDoesNotAnswerInTimeIsAskedAgainUntilTheBound() {
        this.flaky.goSlow();
        long start = System.nanoTime();
        assertThat(this.store.warmUp(this.throttler.policies().values(), Duration.ofMillis(300)))
                .isFalse();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(300));
        assertThat(this.flaky.calls()).as("asked again and again").isGreaterThan(10);
        assertThat(this.store.isStoreDown()).isTrue();
        assertThat(this.logs)
                .singleElement()
                .satisfies((record) -> assertThat(record.getMessage())
                        .startsWith("Throttle store 'flaky' failed (no answer to its warm-up within 300 ms: "));
    }

    @Test
    void aStoreThatAnswersAfterSomeSlowCallsIsWarmedUp() throws Exception {
        this.flaky.goSlow();
        Thread comesBack = new Thread(() -> {
            try {
                Thread.sleep(100);
            } catch (InterruptedException ex) {
                return;
            }
            this.flaky.comeBack();
        });
        comesBack.start();
        assertThat(this.store.warmUp(this.throttler.policies().values(), Duration.ofSeconds(10)))
                .isTrue();
        comesBack.join();
        assertThat(this.store.isStoreDown()).isFalse();
        assertThat(this.logs).isEmpty();
    }
}
