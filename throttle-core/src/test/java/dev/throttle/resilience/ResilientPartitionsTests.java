package dev.throttle.resilience;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Limiter;
import dev.throttle.ManualTimeSource;
import dev.throttle.Policy;
import dev.throttle.SourcedDecision;
import dev.throttle.SourcedLimiter;
import dev.throttle.ThrottleStore;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.testing.Eventually;
import dev.throttle.testing.FlakyStore;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The failure policy around a store of two partitions that fail on their own (a double of a Redis
 * Cluster of two masters, no Redis): a partition is taken out by its own failures, its keys are then
 * answered by the failure mode without asking the store while the other partition's keys are still
 * decided by the store, exactly; each partition comes back by a probe on a key of its own, gets the
 * settlements it is owed, and logs one WARN and one INFO naming it.
 */
class ResilientPartitionsTests {

    private static final FixedWindowPolicy POLICY = new FixedWindowPolicy("api", 3, Duration.ofHours(1));

    private final ManualTimeSource clock = new ManualTimeSource();

    private final MemoryThrottleStore stateA = new MemoryThrottleStore(this.clock, 100);

    private final MemoryThrottleStore stateB = new MemoryThrottleStore(this.clock, 100);

    private final FlakyStore nodeA = new FlakyStore(this.stateA, "cluster");

    private final FlakyStore nodeB = new FlakyStore(this.stateB, "cluster");

    private final TwoNodes twoNodes = new TwoNodes(this.nodeA, this.nodeB);

    private final ResilientThrottleStore store =
            new ResilientThrottleStore(this.twoNodes, FailureMode.CLOSED, null, this.clock);

    private final Logger log = Logger.getLogger(ResilientThrottleStore.class.getName());

    private final List<LogRecord> logs = new CopyOnWriteArrayList<>();

    private final Handler capture = new Handler() {

        @Override
        public void publish(LogRecord record) {
            ResilientPartitionsTests.this.logs.add(record);
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
    void aPartitionThatTimesOutIsTakenOutByItsOwnTimeoutsAlthoughTheOtherAnswersBetweenThem() {
        SourcedLimiter limiter = (SourcedLimiter) this.store.limiter(POLICY);
        this.nodeA.holdProbes(true);
        this.nodeA.goSlow();
        for (int i = 0; i < StoreHealth.TIMEOUTS_FOR_AN_OUTAGE; i++) {
            assertThat(limiter.tryAcquireSourced("a-user", 1).source().isFailureMode())
                    .as("a timeout is answered by the failure mode")
                    .isTrue();
            assertThat(limiter.tryAcquireSourced("b-user-" + i, 1).source().isFailureMode())
                    .as("the other partition answers between the timeouts")
                    .isFalse();
        }
        assertThat(this.store.isStoreDown()).as("three timeouts of its own").isTrue();
        int asked = this.nodeA.decisions();
        for (int i = 0; i < 10; i++) {
            SourcedDecision down = limiter.tryAcquireSourced("a-user", 1);
            assertThat(down.source().isFailureMode()).isTrue();
            assertThat(down.decision().allowed()).as("failure-mode closed").isFalse();
        }
        assertThat(this.nodeA.decisions())
                .as("the dead partition's keys are answered without asking it")
                .isEqualTo(asked);

        for (int i = 0; i < 3; i++) {
            SourcedDecision healthy = limiter.tryAcquireSourced("b-exact", 1);
            assertThat(healthy.source().isFailureMode()).isFalse();
            assertThat(healthy.decision().allowed()).isTrue();
        }
        SourcedDecision over = limiter.tryAcquireSourced("b-exact", 1);
        assertThat(over.source().isFailureMode())
                .as("the healthy partition still decides")
                .isFalse();
        assertThat(over.decision().allowed()).as("exactly its limit").isFalse();

        assertThat(warnings())
                .singleElement()
                .asString()
                .startsWith("Throttle store 'cluster' (node-a) failed (")
                .endsWith("); failure-mode closed applies to its keys until it answers again");
        assertThat(this.store.outageCause())
                .get()
                .extracting(Throwable::getMessage)
                .isEqualTo("throttle store 'cluster' (node-a) is down; failure-mode closed applies to its keys");
    }

    @Test
    void aFailureThatIsNotATimeoutTakesOutItsPartitionAtOnceAndAProbeOfItsOwnBringsItBack() {
        Limiter limiter = this.store.limiter(POLICY);
        this.nodeB.goDown();
        assertThat(limiter.tryAcquire("b-user", 1).allowed()).isFalse();
        assertThat(this.store.isStoreDown()).isTrue();
        assertThat(limiter.tryAcquire("a-user", 1).allowed())
                .as("the other partition is not down")
                .isTrue();

        this.nodeB.comeBack();
        // each call while it is down starts a probe unless one runs (one started while it was down may)
        Eventually.until("a probe found node-b again", () -> {
            limiter.peek("b-user");
            return !this.store.isStoreDown();
        });
        assertThat(this.nodeB.probes()).as("the probe wrote on node-b").isPositive();
        assertThat(this.nodeA.probes())
                .as("no probe of node-a, which never failed")
                .isZero();
        int decisions = this.nodeB.decisions();
        assertThat(limiter.tryAcquire("b-fresh", 1).allowed())
                .as("node-b decides again")
                .isTrue();
        assertThat(this.nodeB.decisions()).isEqualTo(decisions + 1);
        assertThat(infos())
                .singleElement()
                .asString()
                .startsWith("Throttle store 'cluster' (node-b) answers again after ")
                .endsWith(" ms; decisions use it again");
        assertThat(warnings()).singleElement().asString().contains("(node-b)").contains("flaky store is down");
    }

    @Test
    void settlementsOwedToADownPartitionAreReplayedToItWhenItAnswersAgain() {
        Limiter limiter = this.store.limiter(POLICY);
        Decision takenOnA = limiter.tryAcquire("a-user", 1);
        Decision takenOnB = limiter.tryAcquire("b-user", 1);
        limiter.tryAcquire("b-user", 1);
        limiter.tryAcquire("b-user", 1);
        this.nodeA.goDown();
        assertThat(limiter.tryAcquire("a-other", 1).allowed()).isFalse();
        assertThat(this.store.isStoreDown()).isTrue();

        limiter.refund("a-user", 1, takenOnA.receipt());
        limiter.reset("a-locked");
        assertThat(this.stateA.limiter(POLICY).peek("a-user").remaining())
                .as("owed to node-a, not given yet")
                .isEqualTo(2);
        limiter.refund("b-user", 1, takenOnB.receipt());
        assertThat(this.stateB.limiter(POLICY).peek("b-user").allowed())
                .as("node-b answers: its refund is given at once, not kept behind node-a's")
                .isTrue();

        this.nodeA.comeBack();
        Eventually.until("node-a answers again", () -> {
            limiter.peek("a-user");
            return !this.store.isStoreDown();
        });
        assertThat(this.stateA.limiter(POLICY).peek("a-user").remaining())
                .as("the refund owed to node-a applied there")
                .isEqualTo(3);
        assertThat(infos())
                .singleElement()
                .asString()
                .contains("(node-a) answers again after ")
                .contains("; 2 refunds, resets, charges and acquires kept meanwhile applied to it");
    }

    @Test
    void aPartitionWhoseKeysMovedElsewhereEndsItsOutageWhenTheOtherPartitionIsCalled() {
        Limiter limiter = this.store.limiter(POLICY);
        this.nodeA.goDown();
        limiter.tryAcquire("a-user", 1);
        assertThat(this.store.isStoreDown()).isTrue();

        // a failover: node-b serves node-a's keys now, and node-a holds none
        this.twoNodes.moveAllToB();
        assertThat(limiter.tryAcquire("a-user", 1).allowed())
                .as("the key is on node-b now, which decides at once")
                .isTrue();
        Eventually.until("node-a's outage ended", () -> {
            limiter.peek("b-other");
            return !this.store.isStoreDown();
        });
        assertThat(infos())
                .singleElement()
                .asString()
                .startsWith("Throttle store 'cluster' (node-a) holds none of its keys any more after ");
        assertThat(warnings()).hasSize(1);
    }

    private List<String> warnings() {
        return messages(Level.WARNING);
    }

    private List<String> infos() {
        return messages(Level.INFO);
    }

    private List<String> messages(Level level) {
        return this.logs.stream()
                .filter((record) -> record.getLevel() == level)
                .map(LogRecord::getMessage)
                .toList();
    }

    /**
     * Two stores as the partitions of one: keys starting with {@code a} live on {@code node-a}, the
     * others (and half of the failure policy's probe keys, by their hash) on {@code node-b}, until
     * {@link #moveAllToB}.
     */
    private static final class TwoNodes implements ThrottleStore {

        private static final String NODE_A = "node-a";

        private static final String NODE_B = "node-b";

        private final FlakyStore nodeA;

        private final FlakyStore nodeB;

        private volatile boolean allOnB;

        TwoNodes(FlakyStore nodeA, FlakyStore nodeB) {
            this.nodeA = nodeA;
            this.nodeB = nodeB;
        }

        void moveAllToB() {
            this.allOnB = true;
        }

        String partitionOf(String key) {
            if (this.allOnB) {
                return NODE_B;
            }
            boolean onA = key.startsWith("\u0000") ? (key.hashCode() & 1) == 0 : key.startsWith("a");
            return onA ? NODE_A : NODE_B;
        }

        @Override
        public Limiter limiter(Policy policy) {
            Limiter onA = this.nodeA.limiter(policy);
            Limiter onB = this.nodeB.limiter(policy);
            return new Limiter() {

                private Limiter of(String key) {
                    return (partitionOf(key) == NODE_A) ? onA : onB;
                }

                @Override
                public Object partition(String key) {
                    return partitionOf(key);
                }

                @Override
                public Policy policy() {
                    return policy;
                }

                @Override
                public Decision tryAcquire(String key, int cost) {
                    return of(key).tryAcquire(key, cost);
                }

                @Override
                public CompletionStage<Decision> tryAcquireAsync(String key, int cost) {
                    return of(key).tryAcquireAsync(key, cost);
                }

                @Override
                public void refund(String key, int cost) {
                    of(key).refund(key, cost);
                }

                @Override
                public void refund(String key, int cost, long receipt) {
                    of(key).refund(key, cost, receipt);
                }

                @Override
                public CompletionStage<Void> refundAsync(String key, int cost, long receipt) {
                    return of(key).refundAsync(key, cost, receipt);
                }

                @Override
                public Decision peek(String key) {
                    return of(key).peek(key);
                }

                @Override
                public void reset(String key) {
                    of(key).reset(key);
                }

                @Override
                public CompletionStage<Void> resetAsync(String key) {
                    return of(key).resetAsync(key);
                }
            };
        }

        @Override
        public String kind() {
            return "cluster";
        }
    }
}
