package dev.throttle.resilience;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.BoundPolicy;
import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Limiter;
import dev.throttle.ManualTimeSource;
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
 * Settlements survive an outage, on the failure policy around a {@link FlakyStore}: a refund goes to the store that
 * took the unit, whichever answers when it is made; a refund or reset that the store is owed and
 * missed it is kept and applied to it when it answers again, in order and before it decides again; a
 * reset says whether it reached the store; what is kept is bounded and expires.
 */
class ResilientSettlementsTests {

    private static final FixedWindowPolicy POLICY = new FixedWindowPolicy("login", 3, Duration.ofHours(1));

    private final ManualTimeSource clock = new ManualTimeSource();

    /** The state the store holds, looked at directly. */
    private final MemoryThrottleStore primary = new MemoryThrottleStore(this.clock, 100_000);

    private final RecordingStore recording = new RecordingStore(this.primary);

    private final FlakyStore flaky = new FlakyStore(this.recording, "flaky");

    private final MemoryThrottleStore local = new MemoryThrottleStore(this.clock, 100_000);

    private final ResilientThrottleStore store =
            new ResilientThrottleStore(this.flaky, FailureMode.LOCAL, this.local, this.clock);

    private final BoundPolicy login = new Throttler(this.store, List.of(POLICY)).bound("login");

    private final Logger log = Logger.getLogger(ResilientThrottleStore.class.getName());

    private final List<LogRecord> logs = new CopyOnWriteArrayList<>();

    private final Handler capture = new Handler() {

        @Override
        public void publish(LogRecord record) {
            ResilientSettlementsTests.this.logs.add(record);
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

    private Limiter inStore() {
        return this.primary.limiter(POLICY);
    }

    private Limiter inLocal() {
        return this.local.limiter(POLICY);
    }

    /** The store answers again, and a call (on another key) lets a probe find it. */
    private void storeComesBack() {
        this.flaky.comeBack();
        // on a key of the probes' own, which the recording leaves out: a probe started while the store
        // was down may find it back first, and this call then reaches the store
        this.login.tryAcquire("\u0000probe:traffic", 1);
        // calls keep coming, as traffic does: a probe that an earlier call started while the store was
        // still down may fail just before it comes back, and only a later call starts the next one (on
        // a key of the probes' own, which the recording leaves out, so that nothing is added after it)
        Eventually.until("the probe found the store", () -> {
            if (!this.store.isStoreDown()) {
                return true;
            }
            this.login.tryAcquire("\u0000probe:traffic", 1);
            return false;
        });
        assertThat(this.store.isStoreDown()).as("the probe found the store").isFalse();
    }

    @Test
    void aRefundGoesToTheStoreThatTookTheUnitWhicheverAnswersWhenItIsMade() {
        Decision aliceByStore = this.login.tryAcquire("alice", 1);
        Decision carolByStore = this.login.tryAcquire("carol", 1);
        this.flaky.goDown();
        Decision aliceByLocal = this.login.tryAcquire("alice", 1);
        Decision carolByLocal = this.login.tryAcquire("carol", 1);
        assertThat(this.store.isStoreDown()).isTrue();

        this.login.refund("alice", 1, aliceByStore);
        assertThat(inLocal().peek("alice").remaining())
                .as("the local store did not take it: nothing to give back there")
                .isEqualTo(2);
        assertThat(inStore().peek("alice").remaining())
                .as("the store is down: not yet")
                .isEqualTo(2);
        this.login.refund("alice", 1, aliceByLocal);
        assertThat(inLocal().peek("alice").remaining())
                .as("what the local store took goes back to it")
                .isEqualTo(3);

        storeComesBack();
        assertThat(inStore().peek("alice").remaining())
                .as("owed to the store, applied when it answered")
                .isEqualTo(3);

        this.login.refund("carol", 1, carolByLocal);
        assertThat(inLocal().peek("carol").remaining())
                .as("taken locally, refunded locally after the outage")
                .isEqualTo(3);
        assertThat(inStore().peek("carol").remaining())
                .as("not charged back to the store")
                .isEqualTo(2);
        this.login.refund("carol", 1, carolByStore);
        assertThat(inStore().peek("carol").remaining()).isEqualTo(3);
    }

    @Test
    void theNonBlockingRefundGoesToTheStoreThatTookTheUnitToo() {
        Decision byStore =
                this.login.tryAcquireAsync("alice", 1).toCompletableFuture().join();
        this.flaky.goDown();
        Decision byLocal =
                this.login.tryAcquireAsync("alice", 1).toCompletableFuture().join();
        assertThat(this.login.refundAsync("alice", 1, byStore).toCompletableFuture())
                .isCompleted();
        assertThat(inLocal().peek("alice").remaining()).isEqualTo(2);
        assertThat(this.login.refundAsync("alice", 1, byLocal).toCompletableFuture())
                .isCompleted();
        assertThat(inLocal().peek("alice").remaining()).isEqualTo(3);
        storeComesBack();
        assertThat(inStore().peek("alice").remaining()).isEqualTo(3);
    }

    @Test
    void aResetDuringAnOutageSaysItMissedTheStoreClearsTheLocalStoreAndIsAppliedWhenTheStoreAnswers() {
        for (int i = 0; i < 3; i++) {
            this.login.tryAcquire("alice", 1);
        }
        assertThat(this.login.tryAcquire("alice", 1).allowed())
                .as("locked out in the store")
                .isFalse();
        assertThat(this.login.reset("bob"))
                .as("a reset that reached the store says so")
                .isTrue();
        this.flaky.goDown();
        this.login.tryAcquire("alice", 1);
        assertThat(this.login.reset("alice")).as("the store was not reached").isFalse();
        assertThat(inLocal().peek("alice").remaining())
                .as("unlocked on this instance at once")
                .isEqualTo(3);
        assertThat(inStore().peek("alice").allowed())
                .as("still locked in the store, for now")
                .isFalse();

        storeComesBack();
        assertThat(inStore().peek("alice").remaining())
                .as("the reset was applied when the store answered")
                .isEqualTo(3);
        assertThat(this.login.tryAcquire("alice", 1).allowed()).isTrue();
    }

    @Test
    void aNonBlockingResetDuringAnOutageIsAppliedWhenTheStoreAnswers() {
        for (int i = 0; i < 3; i++) {
            this.login.tryAcquire("alice", 1);
        }
        this.flaky.goDown();
        assertThat(this.login.resetAsync("alice").toCompletableFuture()).isCompleted();
        assertThat(inStore().peek("alice").allowed()).isFalse();
        storeComesBack();
        assertThat(inStore().peek("alice").remaining()).isEqualTo(3);
    }

    @Test
    void aChargeAfterTheCallDuringAnOutageHoldsLocallyAndIsAppliedWhenTheStoreAnswers() {
        Decision alice = this.login.tryAcquire("alice", 1);
        this.flaky.goDown();
        assertThat(this.login.settle("alice", 1, alice, 3, 3))
                .as("kept for the store")
                .isEqualTo(-1);
        assertThat(inLocal().peek("alice").remaining())
                .as("the local store holds the limit meanwhile")
                .isEqualTo(1);
        assertThat(inStore().peek("alice").remaining()).isEqualTo(2);
        storeComesBack();
        assertThat(inStore().peek("alice").remaining())
                .as("the charge reached the store once it answered")
                .isZero();
        assertThat(this.recording.operations).containsOnlyOnce("chargeAsync login alice");
    }

    @Test
    void aNonBlockingChargeReachesTheStoreAndSaysTheDebt() {
        Decision alice =
                this.login.tryAcquireAsync("alice", 1).toCompletableFuture().join();
        assertThat(this.login
                        .settleAsync("alice", 1, alice, 5, 10)
                        .toCompletableFuture()
                        .join())
                .as("5 taken of 3: 2 owed")
                .isEqualTo(2);
        assertThat(this.recording.operations).contains("chargeAsync login alice");
    }

    @Test
    void whatTheStoreIsOwedIsAppliedInTheOrderMadeBeforeItDecidesAgain() {
        Decision alice1 = this.login.tryAcquire("alice", 1);
        Decision bob = this.login.tryAcquire("bob", 1);
        Decision alice2 = this.login.tryAcquire("alice", 1);
        this.flaky.goDown();
        this.login.refund("alice", 1, alice1);
        this.login.reset("alice");
        this.login.refundAsync("bob", 1, bob);
        this.login.refund("alice", 1, alice2);
        this.login.resetAsync("carol");
        int from = this.recording.operations.size();
        storeComesBack();
        this.login.tryAcquire("alice", 1);
        assertThat(this.recording.since(from))
                .containsExactly(
                        "refundAsync login alice",
                        "resetAsync login alice",
                        "refundAsync login bob",
                        "refundAsync login alice",
                        "resetAsync login carol",
                        "tryAcquire login alice");
        assertThat(this.logs)
                .extracting(LogRecord::getMessage)
                .last()
                .asString()
                .contains("5 refunds, resets, charges and acquires kept meanwhile applied to it")
                .doesNotContain("alice", "bob", "carol");
    }

    @Test
    void whatTheStoreIsOwedExpiresWithThePolicysIdleExpiry() {
        Decision alice = this.login.tryAcquire("alice", 1);
        this.flaky.goDown();
        this.login.refund("alice", 1, alice);
        this.login.reset("bob");
        this.clock.advance(Duration.ofMinutes(30));
        this.login.reset("carol");
        this.clock.advance(Duration.ofMinutes(30));
        int from = this.recording.operations.size();
        storeComesBack();
        assertThat(this.recording.since(from))
                .as("an hour old: the state they settled has expired anyway")
                .containsExactly("resetAsync login carol");
    }

    @Test
    void whatTheStoreIsOwedIsBoundedPerPolicyDroppingTheOldestWithOneWarn() {
        Decision taken = this.login.tryAcquire("k", 1);
        this.flaky.goDown();
        int owed = Settlements.MAX_OWED_PER_POLICY;
        for (int i = 0; i <= owed; i++) {
            this.login.refund("k" + i, 1, taken);
        }
        int from = this.recording.operations.size();
        storeComesBack();
        List<String> applied = this.recording.since(from);
        assertThat(applied)
                .hasSize(owed)
                .doesNotContain("refundAsync login k0")
                .startsWith("refundAsync login k1")
                .endsWith("refundAsync login k" + owed);
        assertThat(this.logs)
                .filteredOn((record) -> record.getLevel() == Level.WARNING)
                .extracting(LogRecord::getMessage)
                .containsExactly(
                        "Throttle store 'flaky' failed (flaky store is down); failure-mode local applies until it "
                                + "answers again",
                        "Throttle store 'flaky' owes more than 10000 refunds, resets, charges and acquires of policy "
                                + "'login' made while it could not be reached; the oldest are dropped");
    }

    @Test
    void aTimedOutRefundIsNotSentAgainButATimedOutResetIs() {
        Decision alice = this.login.tryAcquire("alice", 1);
        this.flaky.goSlow();
        this.login.refund("alice", 1, alice);
        assertThat(this.login.reset("bob")).isFalse();
        assertThat(this.store.isStoreDown()).as("two timeouts are no outage").isFalse();
        this.flaky.comeBack();
        int from = this.recording.operations.size();
        this.login.tryAcquire("dave", 1);
        assertThat(this.recording.since(from))
                .as("the reset is applied once the store answers; the refund, maybe "
                        + "applied by the store already, is not sent twice")
                .containsExactly("tryAcquire login dave", "resetAsync login bob");
    }

    @Test
    void aSettlementMadeWhileTheStoreIsOwedEarlierOnesWaitsItsTurn() {
        this.flaky.goSlow();
        this.login.reset("alice");
        this.flaky.comeBack();
        int from = this.recording.operations.size();
        assertThat(this.login.reset("bob"))
                .as("kept behind the earlier reset, and applied after it")
                .isFalse();
        assertThat(this.recording.since(from)).containsExactly("resetAsync login alice", "resetAsync login bob");
        assertThat(this.login.reset("bob")).isTrue();
    }

    @Test
    void oneSlowAnswerIsNoOutageTheThirdInARowIs() {
        this.flaky.goSlow();
        for (int i = 0; i < 2; i++) {
            assertThat(this.login.tryAcquire("alice", 1).allowed())
                    .as("answered by the failure mode")
                    .isTrue();
        }
        assertThat(this.store.isStoreDown()).isFalse();
        this.flaky.comeBack();
        this.login.tryAcquire("alice", 1);
        this.flaky.goSlow();
        for (int i = 0; i < 2; i++) {
            this.login.tryAcquire("alice", 1);
        }
        assertThat(this.store.isStoreDown())
                .as("an answer in between starts the count again")
                .isFalse();
        this.login.tryAcquireAsync("alice", 1).toCompletableFuture().join();
        assertThat(this.store.isStoreDown()).as("the third in a row").isTrue();
        assertThat(this.logs).extracting(LogRecord::getLevel).containsExactly(Level.WARNING);
    }
}
