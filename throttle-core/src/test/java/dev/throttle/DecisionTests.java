package dev.throttle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.openjdk.jol.datamodel.Model64;
import org.openjdk.jol.info.ClassLayout;
import org.openjdk.jol.layouters.HotSpotLayouter;
import org.openjdk.jol.vm.VM;

class DecisionTests {

    static {
        // JOL reads this once, when it first looks at the VM; it needs it to walk records
        System.setProperty("jol.magicFieldOffset", "true");
    }

    /** The longest duration a decision keeps exactly: 2^48-2 ms. */
    private static final long LONGEST_KEPT_MILLIS = (1L << 48) - 2;

    private static final int[] REMAINING_EDGES = {0, 1, 65535, 65536, Integer.MAX_VALUE};

    /** What {@link Decision} was before it was packed: its equals, hashCode and toString are the reference. */
    private record RecordDecision(
            boolean allowed, int limit, int remaining, long retryAfterMillis, long resetAfterMillis) {}

    @Test
    void retryAfterInSecondsIsRoundedUpAndNeverZeroForARefusal() {
        assertThat(Decision.reject(1, 0, 1, 1).retryAfterSeconds()).isEqualTo(1);
        assertThat(Decision.reject(1, 0, 1000, 1).retryAfterSeconds()).isEqualTo(1);
        assertThat(Decision.reject(1, 0, 1001, 1).retryAfterSeconds()).isEqualTo(2);
        assertThat(Decision.reject(1, 0, 0, 0).retryAfterMillis()).isEqualTo(1);
        assertThat(Decision.allow(1, 1, 0).retryAfterSeconds()).isZero();
    }

    @Test
    void anAllowedDecisionCannotCarryAWait() {
        assertThatIllegalArgumentException().isThrownBy(() -> new Decision(true, 1, 0, 5, 0));
        assertThatIllegalArgumentException().isThrownBy(() -> new Decision(false, 1, 0, 0, 0));
    }

    @Test
    void aCostThatCanNeverPassSaysSo() {
        Decision never = Decision.neverAllowed(3);
        assertThat(never.allowed()).isFalse();
        assertThat(never.canSucceedLater()).isFalse();
        assertThat(Decision.reject(3, 0, 10, 10).canSucceedLater()).isTrue();
        assertThat(new ThrottledException(new GcraPolicy("api", 3, java.time.Duration.ofMinutes(1)), never))
                .hasMessage(
                        "Policy 'api' can never grant this call: its cost is more than the 3 the policy allows at once")
                .satisfies((ex) -> assertThat(ex.getStackTrace()).isEmpty());
    }

    @Test
    void everyFieldRoundTripsExactlyAtItsEdges() {
        int[] limits = {0, 1, Integer.MAX_VALUE};
        long[] durations = {0, 1, 65535, 65536, LONGEST_KEPT_MILLIS - 1, LONGEST_KEPT_MILLIS};
        for (int limit : limits) {
            for (int remaining : REMAINING_EDGES) {
                for (long resetAfter : durations) {
                    assertRoundTrips(true, limit, remaining, 0, resetAfter);
                    for (long retryAfter : durations) {
                        if (retryAfter > 0) {
                            assertRoundTrips(false, limit, remaining, retryAfter, resetAfter);
                        }
                    }
                    assertRoundTrips(false, limit, remaining, Decision.NEVER, resetAfter);
                }
            }
        }
    }

    @Test
    void remainingIsKeptWhateverItsBitsAre() {
        for (int bit = 0; bit < 31; bit++) {
            int remaining = 1 << bit;
            assertThat(Decision.allow(7, remaining, 5).remaining()).isEqualTo(remaining);
            assertThat(Decision.reject(7, remaining, 3, 5).remaining()).isEqualTo(remaining);
            assertThat(Decision.allow(7, remaining - 1, LONGEST_KEPT_MILLIS).remaining())
                    .isEqualTo(remaining - 1);
        }
        assertThat(Decision.reject(7, 0x5555_5555, 3, 5).remaining()).isEqualTo(0x5555_5555);
        assertThat(Decision.reject(7, 0x2AAA_AAAA, Decision.NEVER, LONGEST_KEPT_MILLIS)
                        .remaining())
                .isEqualTo(0x2AAA_AAAA);
    }

    @Test
    void neverIsKeptExactlyWithItsRemainingAndReset() {
        Decision never = new Decision(false, Integer.MAX_VALUE, Integer.MAX_VALUE, Decision.NEVER, 42);
        assertThat(never.retryAfterMillis()).isEqualTo(Decision.NEVER);
        assertThat(never.retryAfterSeconds()).isEqualTo(Decision.NEVER / 1000);
        assertThat(never.retryAfter()).isEqualTo(Duration.ofMillis(Decision.NEVER));
        assertThat(never.canSucceedLater()).isFalse();
        assertThat(never.allowed()).isFalse();
        assertThat(never.remaining()).isEqualTo(Integer.MAX_VALUE);
        assertThat(never.resetAfterMillis()).isEqualTo(42);
        assertThat(Decision.reject(1, 0, Decision.NEVER, 0).canSucceedLater()).isFalse();
        assertThat(Decision.neverAllowed(3).retryAfterMillis()).isEqualTo(Decision.NEVER);
    }

    @Test
    void aWaitAboveTheLongestKeptDurationIsReportedAsThatAndStaysAPossibleRefusal() {
        for (long retryAfter :
                new long[] {LONGEST_KEPT_MILLIS + 1, LONGEST_KEPT_MILLIS + 2, 1L << 62, Decision.NEVER - 1}) {
            Decision refusal = Decision.reject(5, 65536, retryAfter, 10);
            assertThat(refusal.retryAfterMillis()).isEqualTo(LONGEST_KEPT_MILLIS);
            assertThat(refusal.allowed()).isFalse();
            assertThat(refusal.canSucceedLater()).isTrue();
            assertThat(refusal.retryAfterSeconds()).isEqualTo((LONGEST_KEPT_MILLIS + 999) / 1000);
            assertThat(refusal.remaining()).isEqualTo(65536);
            assertThat(refusal.resetAfterMillis()).isEqualTo(10);
        }
    }

    @Test
    void aResetAboveTheLongestKeptDurationIsReportedAsThat() {
        for (long resetAfter : new long[] {LONGEST_KEPT_MILLIS + 1, 1L << 48, Long.MAX_VALUE}) {
            Decision allowed = Decision.allow(5, Integer.MAX_VALUE, resetAfter);
            assertThat(allowed.resetAfterMillis()).isEqualTo(LONGEST_KEPT_MILLIS);
            assertThat(allowed.resetAfterSeconds()).isEqualTo((LONGEST_KEPT_MILLIS + 999) / 1000);
            assertThat(allowed.resetAfter()).isEqualTo(Duration.ofMillis(LONGEST_KEPT_MILLIS));
            assertThat(allowed.allowed()).isTrue();
            assertThat(allowed.remaining()).isEqualTo(Integer.MAX_VALUE);
            assertThat(allowed.retryAfterMillis()).isZero();
        }
    }

    @Test
    void toStringReadsAsARecordWould() {
        assertThat(Decision.allow(10, 3, 2000))
                .hasToString(
                        "Decision[allowed=true, limit=10, remaining=3, retryAfterMillis=0, resetAfterMillis=2000]");
        assertThat(Decision.neverAllowed(4))
                .hasToString("Decision[allowed=false, limit=4, remaining=0, retryAfterMillis=" + Long.MAX_VALUE
                        + ", resetAfterMillis=0]");
        for (RecordDecision expected : samples()) {
            assertThat(decisionOf(expected))
                    .hasToString(expected.toString().replaceFirst("^RecordDecision", "Decision"));
        }
    }

    @Test
    void equalsAndHashCodeAreThoseOfARecordOfTheFiveValues() {
        List<RecordDecision> samples = samples();
        for (RecordDecision expected : samples) {
            Decision decision = decisionOf(expected);
            Decision same = decisionOf(expected);
            assertThat(decision).isEqualTo(decision).isEqualTo(same).hasSameHashCodeAs(same);
            assertThat(decision.hashCode()).isEqualTo(expected.hashCode());
            assertThat(decision).isNotEqualTo(null);
            for (RecordDecision other : samples) {
                if (!other.equals(expected)) {
                    assertThat(decision).isNotEqualTo(decisionOf(other));
                }
            }
        }
    }

    @Test
    void eachValueTakesPartInEquality() {
        Decision base = new Decision(false, 10, 70000, 500, 2000);
        assertThat(base)
                .isEqualTo(new Decision(false, 10, 70000, 500, 2000))
                .isNotEqualTo(new Decision(true, 10, 70000, 0, 2000))
                .isNotEqualTo(new Decision(false, 11, 70000, 500, 2000))
                .isNotEqualTo(new Decision(false, 10, 70001, 500, 2000))
                .isNotEqualTo(new Decision(false, 10, 4464, 500, 2000))
                .isNotEqualTo(new Decision(false, 10, 70000, 501, 2000))
                .isNotEqualTo(new Decision(false, 10, 70000, Decision.NEVER, 2000))
                .isNotEqualTo(new Decision(false, 10, 70000, 500, 2001));
    }

    @Test
    void invalidValuesAreRefusedWithTheSameMessagesAsBefore() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new Decision(true, -1, 0, 0, 0))
                .withMessage("limit and remaining must not be negative");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new Decision(true, 1, -1, 0, 0))
                .withMessage("limit and remaining must not be negative");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Decision.allow(1, Integer.MIN_VALUE, 0))
                .withMessage("limit and remaining must not be negative");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new Decision(true, 1, 0, 0, -1))
                .withMessage("resetAfterMillis must not be negative");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Decision.reject(1, 0, 5, Long.MIN_VALUE))
                .withMessage("resetAfterMillis must not be negative");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new Decision(true, 1, 0, 5, 0))
                .withMessage("retryAfterMillis must be 0 when allowed and positive when rejected, was 5");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new Decision(true, 1, 0, Decision.NEVER, 0))
                .withMessage(
                        "retryAfterMillis must be 0 when allowed and positive when rejected, was " + Long.MAX_VALUE);
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new Decision(false, 1, 0, 0, 0))
                .withMessage("retryAfterMillis must be 0 when allowed and positive when rejected, was 0");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new Decision(false, 1, 0, -3, 0))
                .withMessage("retryAfterMillis must be 0 when allowed and positive when rejected, was -3");
    }

    @Test
    void itsOnlyFieldsAreOneIntAndTwoLongsAndAReceiptFieldOnlyInTheDecisionsWhoseValuesDoNotFitBeside() {
        assertThat(instanceFieldTypes(Decision.class)).containsExactly(int.class, long.class, long.class);
        assertThat(Decision.class.getSuperclass()).isEqualTo(Object.class);
        assertThat(instanceFieldTypes(Decision.Stamped.class)).containsExactly(long.class);
        assertThat(Decision.reject(1, 0, 1_000, 1_000).getClass()).isEqualTo(Decision.class);
        assertThat(Decision.allow(1, 0, 1_000, 1_000, 0).getClass()).isEqualTo(Decision.class);
        assertThat(Decision.allow(1, 0, 1_000, 1_000, 7).getClass())
                .as("an allowed call's receipt beside values as small as a store's")
                .isEqualTo(Decision.class);
        assertThat(Decision.allow(100, 40, 60_000, 600, 1_767_225_600_123_456L).getClass())
                .as("a GCRA receipt: microseconds since 1970")
                .isEqualTo(Decision.class);
        assertThat(Decision.allow(1, 0, 1_000, 1_000, 1L << 52).getClass()).isEqualTo(Decision.Stamped.class);
        assertThat(Decision.allow(1, 0, 1L << 30, 1_000, 7).getClass()).isEqualTo(Decision.Stamped.class);
        assertThat(Decision.allow(1, 0, 1_000, 1L << 30, 7).getClass()).isEqualTo(Decision.Stamped.class);
        assertThat(Decision.allow(1 << 23, 0, 1_000, 1_000, 7).getClass()).isEqualTo(Decision.Stamped.class);
        assertThat(Decision.allow(1, 1 << 23, 1_000, 1_000, 7).getClass()).isEqualTo(Decision.Stamped.class);
        assertThat(Decision.reject(1, 0, 1_000, 1_000).withReceipt(7).getClass())
                .isEqualTo(Decision.Stamped.class);
    }

    @Test
    void anAllowedCallsReceiptBesideItsValuesKeepsEveryValueExactlyAtTheEdgesOfBothLayouts() {
        int[] counts = {0, 1, 32767, 32768, (1 << 23) - 1, 1 << 23, Integer.MAX_VALUE};
        long[] durations = {0, 1, (1L << 30) - 1, 1L << 30, LONGEST_KEPT_MILLIS};
        long[] receipts = {1, (1L << 34) - 1, 1L << 34, (1L << 52) - 1, 1L << 52, Long.MAX_VALUE};
        for (int limit : counts) {
            for (int remaining : counts) {
                for (long resetAfter : durations) {
                    for (long nextUnit : durations) {
                        for (long receipt : receipts) {
                            Decision decision = Decision.allow(limit, remaining, resetAfter, nextUnit, receipt);
                            Decision plain = new Decision(true, limit, remaining, 0, resetAfter, nextUnit, 0);
                            assertThat(decision.allowed()).isTrue();
                            assertThat(decision.canSucceedLater()).isTrue();
                            assertThat(decision.limit()).isEqualTo(limit);
                            assertThat(decision.remaining()).isEqualTo(remaining);
                            assertThat(decision.retryAfterMillis()).isZero();
                            assertThat(decision.resetAfterMillis()).isEqualTo(resetAfter);
                            assertThat(decision.nextUnitAfterMillis()).isEqualTo(nextUnit);
                            assertThat(decision.receipt()).isEqualTo(receipt);
                            assertThat(decision)
                                    .isEqualTo(plain)
                                    .hasSameHashCodeAs(plain)
                                    .hasToString(plain.toString());
                            assertThat(plain).isEqualTo(decision);
                            Decision without = decision.withReceipt(0);
                            assertThat(without.receipt()).isZero();
                            assertThat(without.nextUnitAfterMillis()).isEqualTo(nextUnit);
                            assertThat(without).isEqualTo(decision);
                            assertThat(plain.withReceipt(receipt).receipt()).isEqualTo(receipt);
                        }
                    }
                }
            }
        }
    }

    @Test
    void aDecisionWithAReceiptBesideItsValuesDiffersByEachValue() {
        Decision base = Decision.allow(10, 7, 2_000, 200, 1_767_225_600_123_456L);
        assertThat(base)
                .isEqualTo(Decision.allow(10, 7, 2_000, 300, 99))
                .isNotEqualTo(Decision.allow(11, 7, 2_000, 200, 1_767_225_600_123_456L))
                .isNotEqualTo(Decision.allow(10, 6, 2_000, 200, 1_767_225_600_123_456L))
                .isNotEqualTo(Decision.allow(10, 7, 2_001, 200, 1_767_225_600_123_456L))
                .isNotEqualTo(Decision.reject(10, 7, 1, 2_000))
                .isEqualTo(Decision.allow(10, 7, 2_000, 200, 1L << 60))
                .isNotEqualTo(Decision.allow(10, 7, 2_001, 200, 1L << 60));
        assertThat(Decision.reject(10, 7, 1, 2_000)).isNotEqualTo(base);
        assertThat(Decision.allow(10, 7, 1L << 40, 200, 5)).isNotEqualTo(base);
        assertThat(base).isNotEqualTo(Decision.allow(10, 7, 1L << 40, 200, 5));
    }

    private static List<Class<?>> instanceFieldTypes(Class<?> type) {
        return Arrays.stream(type.getDeclaredFields())
                .filter((field) -> !Modifier.isStatic(field.getModifiers()))
                .<Class<?>>map(Field::getType)
                .sorted(Comparator.comparing(Class::getName))
                .toList();
    }

    @Test
    void aDecisionTakes32BytesAndOneWithAReceipt40OnA64BitHotSpotWithCompressedPointers() {
        HotSpotLayouter layouter = new HotSpotLayouter(new Model64(true, true, 8), 17);
        ClassLayout layout = ClassLayout.parseClass(Decision.class, layouter);
        assertThat(layout.headerSize()).isEqualTo(12);
        assertThat(layout.instanceSize()).isEqualTo(32);
        assertThat(ClassLayout.parseClass(Decision.Stamped.class, layouter).instanceSize())
                .isEqualTo(40);
    }

    @Test
    void aDecisionTakesAtMost32BytesAndOneWithAReceiptAtMost40InThisJvmWhenItsHeaderIs12Bytes() {
        assumeTrue(VM.current().objectHeaderSize() == 12, "needs compressed class pointers");
        assertThat(ClassLayout.parseClass(Decision.class).instanceSize()).isLessThanOrEqualTo(32);
        assertThat(ClassLayout.parseClass(Decision.Stamped.class).instanceSize())
                .isLessThanOrEqualTo(40);
    }

    private static void assertRoundTrips(
            boolean allowed, int limit, int remaining, long retryAfterMillis, long resetAfterMillis) {
        Decision decision = new Decision(allowed, limit, remaining, retryAfterMillis, resetAfterMillis);
        assertThat(new RecordDecision(
                        decision.allowed(),
                        decision.limit(),
                        decision.remaining(),
                        decision.retryAfterMillis(),
                        decision.resetAfterMillis()))
                .isEqualTo(new RecordDecision(allowed, limit, remaining, retryAfterMillis, resetAfterMillis));
        assertThat(decision.canSucceedLater()).isEqualTo(retryAfterMillis != Decision.NEVER);
        assertThat(decision.retryAfter()).isEqualTo(Duration.ofMillis(retryAfterMillis));
        assertThat(decision.resetAfter()).isEqualTo(Duration.ofMillis(resetAfterMillis));
        assertThat(decision.retryAfterSeconds())
                .isEqualTo(
                        (retryAfterMillis == Decision.NEVER) ? Decision.NEVER / 1000 : (retryAfterMillis + 999) / 1000);
        assertThat(decision.resetAfterSeconds()).isEqualTo((resetAfterMillis + 999) / 1000);
    }

    private static List<RecordDecision> samples() {
        return List.of(
                new RecordDecision(true, 10, 3, 0, 2000),
                new RecordDecision(true, 0, 0, 0, 0),
                new RecordDecision(true, Integer.MAX_VALUE, Integer.MAX_VALUE, 0, LONGEST_KEPT_MILLIS),
                new RecordDecision(false, 10, 65535, 1, 1),
                new RecordDecision(false, 10, 65536, 1, 1),
                new RecordDecision(false, 1, 0, Decision.NEVER, 0),
                new RecordDecision(false, 1, 0, LONGEST_KEPT_MILLIS, 0),
                new RecordDecision(false, 7, 123456789, 4321, 98765));
    }

    private static Decision decisionOf(RecordDecision values) {
        return new Decision(
                values.allowed(),
                values.limit(),
                values.remaining(),
                values.retryAfterMillis(),
                values.resetAfterMillis());
    }

    @Test
    void anAllowedDecisionCarriesTheTimeUntilItsNextUnitBesideItsReceipt() {
        long[] durations = {0, 1, 999, 1000, 65536, LONGEST_KEPT_MILLIS - 1, LONGEST_KEPT_MILLIS};
        for (int remaining : REMAINING_EDGES) {
            for (long nextUnit : durations) {
                for (long resetAfter : durations) {
                    Decision decision = Decision.allow(7, remaining, resetAfter, nextUnit, 1_767_225_600_123L);
                    assertThat(decision.allowed()).isTrue();
                    assertThat(decision.canSucceedLater()).isTrue();
                    assertThat(decision.retryAfterMillis()).isZero();
                    assertThat(decision.remaining()).isEqualTo(remaining);
                    assertThat(decision.resetAfterMillis()).isEqualTo(resetAfter);
                    assertThat(decision.nextUnitAfterMillis()).isEqualTo(nextUnit);
                    assertThat(decision.nextUnitAfterSeconds()).isEqualTo((nextUnit + 999) / 1000);
                    assertThat(decision.receipt()).isEqualTo(1_767_225_600_123L);
                    assertThat(decision.withReceipt(5).nextUnitAfterMillis()).isEqualTo(nextUnit);
                }
            }
        }
        assertThat(Decision.allow(7, 1, 10, Long.MAX_VALUE, 0).nextUnitAfterMillis())
                .as("saturated as durations are")
                .isEqualTo(LONGEST_KEPT_MILLIS);
    }

    @Test
    void theTimeUntilTheNextUnitIsAHintOutsideEqualityAndText() {
        Decision plain = Decision.allow(10, 3, 20_000);
        Decision hinted = Decision.allow(10, 3, 20_000, 2_000, 42);
        assertThat(hinted).isEqualTo(plain).hasSameHashCodeAs(plain).hasToString(plain.toString());
        assertThat(hinted.nextUnitAfterMillis()).isEqualTo(2_000);
    }

    @Test
    void withoutAHintTheNextUnitComesWhenTheStateIsNeutralAndARefusalWaitsItsRetryAfter() {
        assertThat(Decision.allow(10, 3, 20_000).nextUnitAfterMillis()).isEqualTo(20_000);
        assertThat(Decision.allow(10, 10, 0).nextUnitAfterMillis())
                .as("nothing in use: nothing to wait for")
                .isZero();
        assertThat(Decision.allow(10, 10, 5_000).nextUnitAfterMillis()).isZero();
        assertThat(new Decision(true, 10, 3, 0, 20_000).nextUnitAfterMillis()).isEqualTo(20_000);
        assertThat(Decision.reject(10, 0, 1_500, 20_000).nextUnitAfterMillis()).isEqualTo(1_500);
        assertThat(Decision.reject(10, 0, 1_500, 20_000).nextUnitAfterSeconds()).isEqualTo(2);
        assertThat(Decision.neverAllowed(3).nextUnitAfterMillis())
                .as("no wait helps: the state's own reset")
                .isZero();
    }

    @Test
    void anAllowedDecisionsHintsAreCheckedAsItsOtherValuesAre() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Decision.allow(1, 0, 0, -1, 0))
                .withMessage("nextUnitAfterMillis must not be negative, was -1");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Decision.allow(1, 0, 0, 0, -1))
                .withMessage("receipt must not be negative, was -1");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Decision.allow(1, 0, -1, 0, 0))
                .withMessage("resetAfterMillis must not be negative");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Decision.allow(-1, 0, 0, 0, 0))
                .withMessage("limit and remaining must not be negative");
    }

    @Test
    void aReceiptIsKeptButTakesNoPartInEqualityOrText() {
        Decision decision = Decision.allow(10, 3, 2000);
        Decision stamped = decision.withReceipt(1_700_000_000_123L);
        assertThat(stamped.receipt()).isEqualTo(1_700_000_000_123L);
        assertThat(decision.receipt()).isZero();
        assertThat(stamped).isEqualTo(decision).hasSameHashCodeAs(decision).hasToString(decision.toString());
        assertThat(stamped.withReceipt(1_700_000_000_123L)).isSameAs(stamped);
        assertThatIllegalArgumentException()
                .isThrownBy(() -> decision.withReceipt(-1))
                .withMessage("receipt must not be negative, was -1");
    }
}
