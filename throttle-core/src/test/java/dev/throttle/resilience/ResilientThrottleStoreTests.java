package dev.throttle.resilience;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.DecisionSource;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.Policy;
import dev.throttle.ThrottleListener;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.testing.Eventually;
import dev.throttle.testing.FlakyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The failure policy around a store that is not Redis (a {@link FlakyStore}, a double of the store
 * SPI): a store added later gets the same failure modes by being wrapped. While the store answers it
 * decides; while it is down the mode answers every call at once without asking it, nothing throws,
 * every operation it missed is reported once and every decision is heard once with who made it; one
 * WARN per outage, one background probe at a time, and one INFO when a probe finds it again.
 */
class ResilientThrottleStoreTests {

    private static final FixedWindowPolicy POLICY = new FixedWindowPolicy("login", 3, Duration.ofHours(1));

    private static final DecisionSource FLAKY = DecisionSource.store("flaky");

    private final ManualTimeSource clock = new ManualTimeSource();

    private final FlakyStore flaky = new FlakyStore(new MemoryThrottleStore(this.clock, 100), "flaky");

    private final Heard heard = new Heard();

    private final Logger log = Logger.getLogger(ResilientThrottleStore.class.getName());

    private final List<LogRecord> logs = new CopyOnWriteArrayList<>();

    private final Handler capture = new Handler() {

        @Override
        public void publish(LogRecord record) {
            ResilientThrottleStoreTests.this.logs.add(record);
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    };

    private ResilientThrottleStore store;

    @BeforeEach
    void captureLogs() {
        this.log.addHandler(this.capture);
    }

    @AfterEach
    void closeStoreAndStopCapturing() {
        this.log.removeHandler(this.capture);
        if (this.store != null) {
            this.store.close();
        }
    }

    private Throttler throttler(FailureMode mode) {
        this.store = new ResilientThrottleStore(this.flaky, mode, new MemoryThrottleStore(this.clock, 100));
        return new Throttler(this.store, List.of(POLICY), List.of(this.heard));
    }

    @Test
    void whileTheStoreAnswersItMakesEveryDecisionAndIsToldSo() {
        Throttler throttler = throttler(FailureMode.CLOSED);
        for (int i = 0; i < 3; i++) {
            assertThat(throttler.tryAcquire("login", "alice").allowed()).isTrue();
        }
        assertThat(throttler.tryAcquire("login", "alice").allowed()).isFalse();
        assertThat(throttler
                        .tryAcquireAsync("login", "alice", 1)
                        .toCompletableFuture()
                        .join()
                        .allowed())
                .isFalse();
        assertThat(this.heard.sources).hasSize(5).containsOnly(FLAKY);
        assertThat(this.heard.storeErrors).isEmpty();
        assertThat(this.flaky.calls()).isEqualTo(5);
        assertThat(this.store.isStoreDown()).isFalse();
        assertThat(this.logs).isEmpty();
    }

    @ParameterizedTest
    @EnumSource(FailureMode.class)
    void whileTheStoreIsDownTheModeAnswersEveryCallWithoutAskingItAndNothingThrows(FailureMode mode) {
        Throttler throttler = throttler(mode);
        assertThat(throttler.tryAcquire("login", "alice"))
                .as("the store decides")
                .isEqualTo(Decision.allow(3, 2, 3_600_000));
        this.flaky.holdProbes(true);
        this.flaky.goDown();

        List<Decision> decisions = new ArrayList<>();
        decisions.add(throttler.tryAcquire("login", "alice"));
        assertThat(this.store.isStoreDown()).as("the failure started an outage").isTrue();
        int asked = this.flaky.calls();
        for (int i = 0; i < 3; i++) {
            decisions.add(throttler.tryAcquire("login", "alice"));
        }
        CompletableFuture<Decision> async =
                throttler.tryAcquireAsync("login", "alice", 1).toCompletableFuture();
        assertThat(async).as("answered at once, not when the store would have").isDone();
        decisions.add(async.join());
        Decision peeked = throttler.peek("login", "alice");
        assertThat(throttler.bound("login").refundAsync("alice", 1).toCompletableFuture())
                .isCompleted();
        throttler.refund("login", "alice", 1);
        throttler.reset("login", "carol");
        assertThat(throttler.resetAsync("login", "carol").toCompletableFuture()).isCompleted();

        Eventually.until(
                "the background probe asked the store",
                () -> this.flaky.heldProbes().size() == 1);
        assertThat(this.flaky.calls())
                .as("after the first failure only one background probe asked the store")
                .isEqualTo(asked + 1);
        assertThat(this.flaky.heldProbes()).hasSize(1);
        assertThat(this.heard.decisions).as("each decision heard once").hasSize(1 + decisions.size());
        assertThat(this.heard.storeErrors)
                .as("every operation the store missed, refunds and resets too, and no more")
                .hasSize(decisions.size() + 5);
        assertThat(this.heard.storeErrors.get(0))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("flaky store is down");
        assertThat(this.heard.storeErrors.subList(1, this.heard.storeErrors.size()))
                .allSatisfy((error) -> assertThat(error)
                        .isInstanceOf(StoreUnavailableException.class)
                        .hasMessage("throttle store 'flaky' is down; failure-mode "
                                + mode.name().toLowerCase() + " applies")
                        .hasCauseReference(this.heard.storeErrors.get(0)));
        List<DecisionSource> outage = this.heard.sources.subList(1, this.heard.sources.size());
        switch (mode) {
            case OPEN -> {
                assertThat(decisions).containsOnly(Decision.allow(3, 3, 0));
                assertThat(peeked.allowed()).isTrue();
                assertThat(outage).containsOnly(DecisionSource.failureMode("flaky", "open"));
            }
            case CLOSED -> {
                assertThat(decisions).containsOnly(Decision.reject(3, 0, 1_000, 1_000));
                assertThat(peeked.allowed()).isFalse();
                assertThat(outage).containsOnly(DecisionSource.failureMode("flaky", "closed"));
            }
            case LOCAL -> {
                assertThat(decisions)
                        .extracting(Decision::allowed)
                        .as("this instance enforces the policy on its own")
                        .containsExactly(true, true, true, false, false);
                assertThat(peeked.allowed()).isFalse();
                assertThat(outage).containsOnly(DecisionSource.store("local"));
            }
        }
        assertThat(levels()).containsExactly(Level.WARNING);
    }

    @Test
    void oneWarnPerOutageOneProbeAtATimeAndOneInfoWhenAProbeFindsTheStoreAgain() {
        Throttler throttler = throttler(FailureMode.CLOSED);
        this.flaky.holdProbes(true);
        for (int outage = 1; outage <= 2; outage++) {
            this.flaky.goDown();
            for (int i = 0; i < 20; i++) {
                throttler.tryAcquire("login", "alice@example.com");
            }
            int started = 2 * outage - 1;
            Eventually.until("a probe started", () -> this.flaky.heldProbes().size() >= started);
            assertThat(this.flaky.heldProbes()).as("one probe while one runs").hasSize(2 * outage - 1);
            this.flaky.heldProbes().get(2 * outage - 2).completeExceptionally(new IllegalStateException("still down"));
            assertThat(this.store.isStoreDown())
                    .as("a failed probe ends nothing")
                    .isTrue();
            throttler.tryAcquire("login", "alice@example.com");
            Eventually.until(
                    "the next call started a probe",
                    () -> this.flaky.heldProbes().size() > started);
            assertThat(this.flaky.heldProbes()).as("the next call probes again").hasSize(2 * outage);
            this.flaky.comeBack();
            assertThat(this.store.isStoreDown())
                    .as("down until a probe has answered")
                    .isTrue();
            this.flaky.heldProbes().get(2 * outage - 1).complete(Decision.allow(3, 3, 0));
            assertThat(this.store.isStoreDown()).isFalse();
            throttler.tryAcquire("login", "alice@example.com");
            assertThat(this.heard.sources).last().as("the store decides again").isEqualTo(FLAKY);
        }
        assertThat(levels()).containsExactly(Level.WARNING, Level.INFO, Level.WARNING, Level.INFO);
        assertThat(this.logs)
                .allSatisfy((record) ->
                        assertThat(record.getMessage()).doesNotContain("alice").contains("Throttle store 'flaky'"));
    }

    @Test
    void aCallThatTheStoreDecidesAgainFindsTheOutageLoggedAndTheStoreReportedUp() throws Exception {
        Throttler throttler = throttler(FailureMode.CLOSED);
        this.flaky.holdProbes(true);
        this.flaky.goDown();
        // the first call fails and starts the outage; the second starts a probe
        throttler.tryAcquire("login", "alice");
        throttler.tryAcquire("login", "alice");
        Eventually.until("a probe started", () -> !this.flaky.heldProbes().isEmpty());
        this.flaky.comeBack();
        // the INFO that ends the outage is held while the test calls
        CountDownLatch logging = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Handler holdInfo = new Handler() {

            @Override
            public void publish(LogRecord record) {
                if (record.getLevel() == Level.INFO) {
                    logging.countDown();
                    try {
                        release.await(10, TimeUnit.SECONDS);
                    } catch (InterruptedException ex) {
                        Thread.currentThread().interrupt();
                    }
                }
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        this.log.addHandler(holdInfo);
        try {
            Thread answering = new Thread(() -> this.flaky.heldProbes().get(0).complete(Decision.allow(3, 3, 0)));
            answering.start();
            assertThat(logging.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(throttler.tryAcquire("login", "bob").allowed())
                    .as("answered by the failure mode while the outage is being ended")
                    .isFalse();
            assertThat(this.heard.sources).last().isEqualTo(DecisionSource.failureMode("flaky", "closed"));
            assertThat(this.store.isStoreDown()).isTrue();
            release.countDown();
            answering.join(10_000);
        } finally {
            release.countDown();
            this.log.removeHandler(holdInfo);
        }
        assertThat(throttler.tryAcquire("login", "bob").allowed()).isTrue();
        assertThat(this.heard.sources).last().isEqualTo(FLAKY);
        assertThat(this.store.isStoreDown()).isFalse();
    }

    @Test
    void aStoreThatFailsThroughItsFutureIsAnsweredByTheModeToo() {
        Throttler throttler = throttler(FailureMode.OPEN);
        this.flaky.goDown();
        assertThat(throttler
                        .tryAcquireAsync("login", "k", 1)
                        .toCompletableFuture()
                        .join())
                .isEqualTo(Decision.allow(3, 3, 0));
        assertThat(this.store.isStoreDown()).isTrue();
        assertThat(this.heard.storeErrors).singleElement().isInstanceOf(IllegalStateException.class);
        assertThat(this.heard.sources).containsExactly(DecisionSource.failureMode("flaky", "open"));
    }

    @Test
    void aListenerThatThrowsDoesNotFailTheCall() {
        this.store = new ResilientThrottleStore(this.flaky, FailureMode.CLOSED, null);
        ThrottleListener throwing = new ThrottleListener() {

            @Override
            public void onStoreError(Policy policy, RuntimeException error) {
                throw new IllegalStateException("listener bug");
            }
        };
        Throttler throttler = new Throttler(this.store, List.of(POLICY), List.of(throwing));
        this.flaky.goDown();
        assertThat(throttler.tryAcquire("login", "k").allowed()).isFalse();
        assertThat(throttler
                        .tryAcquireAsync("login", "k", 1)
                        .toCompletableFuture()
                        .join()
                        .allowed())
                .isFalse();
        throttler.reset("login", "k");
    }

    @Test
    void aResetClearsTheLocalStoreTooSoALaterOutageDoesNotReviveAStaleLockout() {
        Throttler throttler = throttler(FailureMode.LOCAL);
        this.flaky.goDown();
        for (int i = 0; i < 3; i++) {
            throttler.tryAcquire("login", "alice");
        }
        assertThat(throttler.tryAcquire("login", "alice").allowed())
                .as("locked out locally")
                .isFalse();
        this.flaky.comeBack();
        // each call while it is down starts a probe unless one runs (one started while it was down may)
        Eventually.until("bob's call probed the store", () -> {
            throttler.tryAcquire("login", "bob");
            return !this.store.isStoreDown();
        });
        assertThat(this.store.isStoreDown())
                .as("bob's call probed the store, which answered")
                .isFalse();
        throttler.reset("login", "alice");
        this.flaky.goDown();
        assertThat(throttler.tryAcquire("login", "alice")).isEqualTo(Decision.allow(3, 2, 3_600_000));
    }

    @Test
    void aStoreDownWhenBoundIsNoFailureAndIsUsedOnceItAnswers() {
        this.flaky.goDown();
        Throttler throttler = throttler(FailureMode.LOCAL);
        assertThat(throttler.tryAcquire("login", "k").allowed()).isTrue();
        assertThat(this.heard.sources).containsExactly(DecisionSource.store("local"));
        this.flaky.comeBack();
        // each call while it is down starts a probe unless one runs (one started while it was down may);
        // on another key, so that the store's state of k is only what the call below takes
        Eventually.until("a call's probe found the store", () -> {
            throttler.tryAcquire("login", "bob");
            return !this.store.isStoreDown();
        });
        assertThat(this.store.isStoreDown()).isFalse();
        assertThat(throttler.tryAcquire("login", "k"))
                .as("the store's own state, not the local one")
                .isEqualTo(Decision.allow(3, 2, 3_600_000));
        assertThat(this.heard.sources).last().isEqualTo(FLAKY);
    }

    private List<Level> levels() {
        return this.logs.stream().map(LogRecord::getLevel).toList();
    }

    /** Everything a listener hears, in order. */
    private static final class Heard implements ThrottleListener {

        final List<Decision> decisions = new CopyOnWriteArrayList<>();

        final List<DecisionSource> sources = new CopyOnWriteArrayList<>();

        final List<RuntimeException> storeErrors = new CopyOnWriteArrayList<>();

        @Override
        public void onDecision(Policy policy, Decision decision, DecisionSource source, long storeNanos) {
            this.decisions.add(decision);
            this.sources.add(source);
        }

        @Override
        public void onStoreError(Policy policy, RuntimeException error) {
            this.storeErrors.add(error);
        }
    }
}
