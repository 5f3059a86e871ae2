package dev.throttle.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.throttle.Algorithm;
import dev.throttle.BoundPolicy;
import dev.throttle.CalendarWindow;
import dev.throttle.ConcurrencyPolicy;
import dev.throttle.Decision;
import dev.throttle.Estimate;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.LockoutPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.MultiLimitPolicy;
import dev.throttle.Policy;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.ThrottleStore;
import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.TokenBucketPolicy;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The contract every {@link ThrottleStore} must keep: one suite of traces per algorithm, written
 * once and run unchanged against each store. Expected decisions are exact, so two stores that
 * pass it decide identically for the same inputs.
 *
 * <p>A store under test reads time from the {@link ManualTimeSource} it is given, which starts at
 * 2026-01-01T00:00:00Z and moves only when a test advances it.
 */
public abstract class ThrottleStoreContract {

    private static final List<Duration> LUCIA_LADDER = seconds(1, 2, 4, 8, 16, 30, 60, 180, 300);

    protected ManualTimeSource clock;

    protected ThrottleStore store;

    /**
     * Creates the store under test, reading time from {@code clock}, with no state from earlier tests.
     * @param clock the clock every decision must read
     * @return a store
     */
    protected abstract ThrottleStore createStore(TimeSource clock);

    @BeforeEach
    void createStoreUnderTest() {
        this.clock = new ManualTimeSource();
        this.store = createStore(this.clock);
    }

    @AfterEach
    void closeStoreUnderTest() {
        this.store.close();
    }

    protected Throttler throttler(Policy... policies) {
        return new Throttler(this.store, List.of(policies));
    }

    /**
     * Whether the store reserves turns for calls that may wait. A store that does not (yet) decides a
     * reservation as a plain decision, never waiting and never taking a future turn: the
     * {@link Reservations} cases then prove that instead.
     * @return true unless the store says otherwise
     */
    protected boolean reservesTurns() {
        return true;
    }

    /**
     * Whether the store runs the {@code concurrency} algorithm. A store that does not (yet) refuses to
     * bind such a policy, naming the algorithm: the {@link ConcurrencySlots} cases then prove that.
     * @return true unless the store says otherwise
     */
    protected boolean runsConcurrency() {
        return true;
    }

    /**
     * Whether the store charges a cost known after the call ({@link dev.throttle.Limiter#charge}). A
     * store that does not (yet) refuses the charge with an {@link UnsupportedOperationException}: the
     * {@link ActualCost} cases then prove that.
     * @return true unless the store says otherwise
     */
    protected boolean chargesAfterTheCall() {
        return true;
    }

    /**
     * Whether the store runs fixed windows of the calendar ({@link CalendarWindow}). A store that does
     * not (yet) refuses to bind such a policy with an {@link IllegalArgumentException} that says so:
     * the {@link CalendarWindows} cases then prove that.
     * @return true unless the store says otherwise
     */
    protected boolean runsCalendarWindows() {
        return true;
    }

    protected void advance(long millis) {
        this.clock.advanceMillis(millis);
    }

    private static List<Duration> seconds(long... values) {
        List<Duration> durations = new ArrayList<>();
        for (long value : values) {
            durations.add(Duration.ofSeconds(value));
        }
        return durations;
    }

    private static Decision allow(int limit, int remaining, long resetAfter) {
        return Decision.allow(limit, remaining, resetAfter);
    }

    private static Decision reject(int limit, int remaining, long retryAfter, long resetAfter) {
        return Decision.reject(limit, remaining, retryAfter, resetAfter);
    }

    @Nested
    class TokenBucket {

        /** Lucia's bucket: 10 tokens, and the "2" of her example is one token per 2 s. */
        private final TokenBucketPolicy lucia = TokenBucketPolicy.of("tb", 10, Duration.ofSeconds(2));

        @Test
        void luciasBucketGrantsCostsUpToItsTokensAndRefillsOneTokenPerTwoSeconds() {
            Throttler throttler = throttler(this.lucia);
            assertThat(throttler.tryAcquire("tb", "ip", 3)).isEqualTo(allow(10, 7, 6_000));
            assertThat(throttler.tryAcquire("tb", "ip", 7)).isEqualTo(allow(10, 0, 20_000));
            assertThat(throttler.tryAcquire("tb", "ip", 1)).isEqualTo(reject(10, 0, 2_000, 20_000));
            advance(2_000);
            assertThat(throttler.tryAcquire("tb", "ip", 2)).isEqualTo(reject(10, 1, 2_000, 18_000));
            advance(1_000);
            assertThat(throttler.tryAcquire("tb", "ip", 2))
                    .as("half a period earns nothing yet")
                    .isEqualTo(reject(10, 1, 1_000, 17_000));
            advance(1_000);
            assertThat(throttler.tryAcquire("tb", "ip", 2)).isEqualTo(allow(10, 0, 20_000));
        }

        @Test
        void partialProgressTowardTheNextTokenIsKept() {
            Throttler throttler = throttler(this.lucia);
            throttler.tryAcquire("tb", "ip", 10);
            advance(3_000);
            assertThat(throttler.tryAcquire("tb", "ip", 1))
                    .as("one token at 2 s, 1 s of progress kept")
                    .isEqualTo(allow(10, 0, 19_000));
            advance(1_000);
            assertThat(throttler.tryAcquire("tb", "ip", 1))
                    .as("the second token comes at 4 s, not 5 s")
                    .isEqualTo(allow(10, 0, 20_000));
        }

        @Test
        void aTokenArrivesExactlyAtTheRefillInstant() {
            Throttler throttler = throttler(this.lucia);
            throttler.tryAcquire("tb", "ip", 10);
            advance(1_999);
            assertThat(throttler.peek("tb", "ip")).isEqualTo(reject(10, 0, 1, 18_001));
            advance(1);
            assertThat(throttler.peek("tb", "ip")).isEqualTo(allow(10, 1, 18_000));
            assertThat(throttler.tryAcquire("tb", "ip", 1)).isEqualTo(allow(10, 0, 20_000));
        }

        @Test
        void refillNeverExceedsCapacityAndAFullBucketRestartsItsClock() {
            Throttler throttler = throttler(this.lucia);
            throttler.tryAcquire("tb", "ip", 1);
            advance(3_600_000);
            assertThat(throttler.peek("tb", "ip")).isEqualTo(allow(10, 10, 0));
            assertThat(throttler.tryAcquire("tb", "ip", 10)).isEqualTo(allow(10, 0, 20_000));
            assertThat(throttler.tryAcquire("tb", "ip", 1)).isEqualTo(reject(10, 0, 2_000, 20_000));
        }

        @Test
        void severalTokensPerPeriod() {
            Throttler throttler = throttler(new TokenBucketPolicy("tb5", 10, 5, Duration.ofSeconds(10)));
            assertThat(throttler.tryAcquire("tb5", "k", 10)).isEqualTo(allow(10, 0, 20_000));
            assertThat(throttler.tryAcquire("tb5", "k", 6)).isEqualTo(reject(10, 0, 20_000, 20_000));
            advance(10_000);
            assertThat(throttler.tryAcquire("tb5", "k", 6)).isEqualTo(reject(10, 5, 10_000, 10_000));
            assertThat(throttler.tryAcquire("tb5", "k", 5)).isEqualTo(allow(10, 0, 20_000));
        }

        @Test
        void costEqualToCapacityPassesAndCostAboveItNeverDoes() {
            Throttler throttler = throttler(this.lucia);
            assertThat(throttler.tryAcquire("tb", "a", 11)).isEqualTo(Decision.neverAllowed(10));
            assertThat(throttler.peek("tb", "a"))
                    .as("a cost that can never pass touches nothing")
                    .isEqualTo(allow(10, 10, 0));
            assertThat(throttler.tryAcquire("tb", "a", 10)).isEqualTo(allow(10, 0, 20_000));
        }

        @Test
        void refundGivesTokensBackButNeverAboveCapacity() {
            Throttler throttler = throttler(this.lucia);
            throttler.tryAcquire("tb", "ip", 10);
            throttler.refund("tb", "ip", 4);
            assertThat(throttler.peek("tb", "ip")).isEqualTo(allow(10, 4, 12_000));
            throttler.refund("tb", "ip", 100);
            assertThat(throttler.peek("tb", "ip")).isEqualTo(allow(10, 10, 0));
            assertThat(throttler.tryAcquire("tb", "ip", 10)).isEqualTo(allow(10, 0, 20_000));
            assertThat(throttler.tryAcquire("tb", "ip", 1).allowed()).isFalse();
        }

        @Test
        void aHugeRefillPeriodDoesNotOverflow() {
            Duration period = Duration.ofDays(1825);
            Throttler throttler = throttler(TokenBucketPolicy.of("slow", 2, period));
            assertThat(throttler.tryAcquire("slow", "k", 2)).isEqualTo(allow(2, 0, 2 * period.toMillis()));
            assertThat(throttler.tryAcquire("slow", "k", 1))
                    .isEqualTo(reject(2, 0, period.toMillis(), 2 * period.toMillis()));
            advance(period.toMillis());
            assertThat(throttler.tryAcquire("slow", "k", 1)).isEqualTo(allow(2, 0, 2 * period.toMillis()));
        }
    }

    @Nested
    class Gcra {

        /** The cooldown document's example: n = 3 per T = 60 s. */
        private final GcraPolicy cooldown = new GcraPolicy("api", 3, Duration.ofSeconds(60));

        @Test
        void cooldownTraceAllowsThreeWithScoresTwentyFortySixtyAheadThenRefusesForTwentySeconds() {
            Throttler throttler = throttler(this.cooldown);
            assertThat(throttler.tryAcquire("api", "u")).isEqualTo(allow(3, 2, 20_000));
            assertThat(throttler.tryAcquire("api", "u")).isEqualTo(allow(3, 1, 40_000));
            assertThat(throttler.tryAcquire("api", "u")).isEqualTo(allow(3, 0, 60_000));
            assertThat(throttler.tryAcquire("api", "u")).isEqualTo(reject(3, 0, 20_000, 60_000));
            assertThat(throttler.tryAcquire("api", "u").retryAfterSeconds()).isEqualTo(20);
        }

        @Test
        void aRefusalDoesNotMoveTheScoreAndTheCallPassesOnceTheScoreAllows() {
            Throttler throttler = throttler(this.cooldown);
            for (int i = 0; i < 3; i++) {
                throttler.tryAcquire("api", "u");
            }
            advance(1_000);
            assertThat(throttler.tryAcquire("api", "u")).isEqualTo(reject(3, 0, 19_000, 59_000));
            advance(4_000);
            assertThat(throttler.tryAcquire("api", "u")).isEqualTo(reject(3, 0, 15_000, 55_000));
            advance(5_000);
            assertThat(throttler.tryAcquire("api", "u")).isEqualTo(reject(3, 0, 10_000, 50_000));
            advance(5_000);
            assertThat(throttler.tryAcquire("api", "u")).isEqualTo(reject(3, 0, 5_000, 45_000));
            advance(4_999);
            assertThat(throttler.tryAcquire("api", "u")).isEqualTo(reject(3, 0, 1, 40_001));
            advance(1);
            assertThat(throttler.tryAcquire("api", "u")).isEqualTo(allow(3, 0, 60_000));
            assertThat(throttler.tryAcquire("api", "u")).isEqualTo(reject(3, 0, 20_000, 60_000));
        }

        @Test
        void anIdleScoreFallsBackToNowSoNoCreditIsBanked() {
            Throttler throttler = throttler(this.cooldown);
            throttler.tryAcquire("api", "u");
            advance(3_600_000);
            for (int i = 0; i < 3; i++) {
                assertThat(throttler.tryAcquire("api", "u").allowed()).isTrue();
            }
            assertThat(throttler.tryAcquire("api", "u").allowed()).isFalse();
        }

        @Test
        void aRateThatIsNotAWholeNumberOfMillisecondsIsKeptInMicroseconds() {
            Throttler throttler = throttler(new GcraPolicy("third", 3, Duration.ofSeconds(1)));
            assertThat(throttler.tryAcquire("third", "u")).isEqualTo(allow(3, 2, 334));
            assertThat(throttler.tryAcquire("third", "u")).isEqualTo(allow(3, 1, 667));
            assertThat(throttler.tryAcquire("third", "u")).isEqualTo(allow(3, 0, 1_000));
            assertThat(throttler.tryAcquire("third", "u")).isEqualTo(reject(3, 0, 334, 1_000));
            advance(333);
            assertThat(throttler.tryAcquire("third", "u").allowed()).isFalse();
            advance(1);
            assertThat(throttler.tryAcquire("third", "u")).isEqualTo(allow(3, 0, 1_000));
            int passed = 0;
            for (int ms = 0; ms < 10_000; ms++) {
                advance(1);
                passed += throttler.tryAcquire("third", "u").allowed() ? 1 : 0;
            }
            assertThat(passed).as("3 per second over 10 s, to the microsecond").isEqualTo(30);
        }

        @Test
        void costTakesThatManyIntervals() {
            Throttler throttler = throttler(this.cooldown);
            assertThat(throttler.tryAcquire("api", "u", 2)).isEqualTo(allow(3, 1, 40_000));
            assertThat(throttler.tryAcquire("api", "u", 2)).isEqualTo(reject(3, 1, 20_000, 40_000));
            assertThat(throttler.tryAcquire("api", "u", 4)).isEqualTo(Decision.neverAllowed(3));
            assertThat(throttler.tryAcquire("api", "u", 1)).isEqualTo(allow(3, 0, 60_000));
        }

        @Test
        void refundGivesIntervalsBackButBanksNothingOnAFreshKey() {
            Throttler throttler = throttler(this.cooldown);
            throttler.refund("api", "u", 3);
            for (int i = 0; i < 3; i++) {
                throttler.tryAcquire("api", "u");
            }
            assertThat(throttler.tryAcquire("api", "u").allowed()).isFalse();
            throttler.refund("api", "u", 1);
            assertThat(throttler.peek("api", "u")).isEqualTo(allow(3, 1, 40_000));
            assertThat(throttler.tryAcquire("api", "u")).isEqualTo(allow(3, 0, 60_000));
        }

        @Test
        void aTenYearPeriodDoesNotOverflow() {
            Duration period = Duration.ofDays(3650);
            Throttler throttler = throttler(new GcraPolicy("decade", 1, period));
            assertThat(throttler.tryAcquire("decade", "u")).isEqualTo(allow(1, 0, period.toMillis()));
            assertThat(throttler.tryAcquire("decade", "u"))
                    .isEqualTo(reject(1, 0, period.toMillis(), period.toMillis()));
            advance(period.toMillis());
            assertThat(throttler.tryAcquire("decade", "u")).isEqualTo(allow(1, 0, period.toMillis()));
        }
    }

    @Nested
    class FixedWindow {

        private final FixedWindowPolicy policy = new FixedWindowPolicy("fw", 3, Duration.ofSeconds(10));

        @Test
        void countsUpToTheLimitWithinTheWindowAndStartsAfreshWhenItEnds() {
            Throttler throttler = throttler(this.policy);
            assertThat(throttler.tryAcquire("fw", "k")).isEqualTo(allow(3, 2, 10_000));
            assertThat(throttler.tryAcquire("fw", "k")).isEqualTo(allow(3, 1, 10_000));
            assertThat(throttler.tryAcquire("fw", "k")).isEqualTo(allow(3, 0, 10_000));
            assertThat(throttler.tryAcquire("fw", "k")).isEqualTo(reject(3, 0, 10_000, 10_000));
            advance(4_000);
            assertThat(throttler.tryAcquire("fw", "k")).isEqualTo(reject(3, 0, 6_000, 6_000));
            advance(5_999);
            assertThat(throttler.tryAcquire("fw", "k")).isEqualTo(reject(3, 0, 1, 1));
            advance(1);
            assertThat(throttler.tryAcquire("fw", "k")).isEqualTo(allow(3, 2, 10_000));
        }

        @Test
        void theWindowStartsAtTheFirstCallAfterThePreviousWindowEnded() {
            Throttler throttler = throttler(this.policy);
            throttler.tryAcquire("fw", "k");
            advance(25_000);
            assertThat(throttler.tryAcquire("fw", "k")).isEqualTo(allow(3, 2, 10_000));
            advance(9_999);
            assertThat(throttler.tryAcquire("fw", "k")).isEqualTo(allow(3, 1, 1));
            advance(1);
            assertThat(throttler.tryAcquire("fw", "k")).isEqualTo(allow(3, 2, 10_000));
        }

        @Test
        void costCountsUnitsAndRefundGivesThemBack() {
            Throttler throttler = throttler(this.policy);
            assertThat(throttler.tryAcquire("fw", "k", 3)).isEqualTo(allow(3, 0, 10_000));
            assertThat(throttler.tryAcquire("fw", "k", 4)).isEqualTo(Decision.neverAllowed(3));
            advance(2_000);
            throttler.refund("fw", "k", 1);
            assertThat(throttler.tryAcquire("fw", "k"))
                    .as("the refund keeps the window's start")
                    .isEqualTo(allow(3, 0, 8_000));
            throttler.refund("fw", "k", 3);
            assertThat(throttler.peek("fw", "k"))
                    .as("everything given back: as if never used")
                    .isEqualTo(allow(3, 3, 0));
        }
    }

    /**
     * Fixed windows of the calendar: they start at midnight in their zone (a month on its 1st or its
     * anchor day, a week on Monday), not at the key's first call, and every wait counts to the real
     * boundary: months of 28 to 31 days, a leap day, a day of 23 hours when the clocks go forward.
     */
    @Nested
    class CalendarWindows {

        private static final long HOUR = 3_600_000L;

        private static final long DAY = 24 * HOUR;

        private final ZoneId utc = ZoneId.of("UTC");

        private final ZoneId berlin = ZoneId.of("Europe/Berlin");

        private void at(String instant) {
            clock.set(Instant.parse(instant));
        }

        private FixedWindowPolicy window(String name, int limit, CalendarWindow.Unit unit, ZoneId zone) {
            return FixedWindowPolicy.calendar(name, limit, CalendarWindow.of(unit, zone));
        }

        /** On a store that does not run calendar windows, binding one is refused, saying so. */
        private Throttler throttlerOrRefused(Policy policy) {
            if (runsCalendarWindows()) {
                return throttler(policy);
            }
            assertThatIllegalArgumentException()
                    .isThrownBy(() -> throttler(policy).tryAcquire(policy.name(), "k"))
                    .withMessageContaining("calendar");
            return null;
        }

        @Test
        void aMonthStartsOnItsFirstAtMidnightAndTheLastCallsOfJanuaryWaitOnlyForFebruary() {
            at("2026-01-20T12:00:00Z");
            Throttler throttler = throttlerOrRefused(window("m", 3, CalendarWindow.Unit.MONTH, this.utc));
            if (throttler == null) {
                return;
            }
            assertThat(throttler.tryAcquire("m", "k"))
                    .as("the window is January, not 31 days from the first call")
                    .isEqualTo(allow(3, 2, 11 * DAY + 12 * HOUR));
            at("2026-01-31T23:59:59Z");
            assertThat(throttler.tryAcquire("m", "k", 2)).isEqualTo(allow(3, 0, 1_000));
            assertThat(throttler.tryAcquire("m", "k")).isEqualTo(reject(3, 0, 1_000, 1_000));
            advance(1_000);
            assertThat(throttler.tryAcquire("m", "k"))
                    .as("February: 28 days in 2026")
                    .isEqualTo(allow(3, 2, 28 * DAY));
            at("2026-02-28T23:00:00Z");
            throttler.tryAcquire("m", "k", 2);
            assertThat(throttler.tryAcquire("m", "k")).isEqualTo(reject(3, 0, HOUR, HOUR));
            at("2026-03-01T00:00:00Z");
            assertThat(throttler.tryAcquire("m", "k")).isEqualTo(allow(3, 2, 31 * DAY));
        }

        @Test
        void aLeapYearsFebruaryHasTwentyNineDaysAndItsLeapDayIsADayOfItsOwn() {
            at("2028-02-01T00:00:00Z");
            Throttler throttler = throttlerOrRefused(window("m", 2, CalendarWindow.Unit.MONTH, this.utc));
            if (throttler == null) {
                return;
            }
            assertThat(throttler.tryAcquire("m", "k")).isEqualTo(allow(2, 1, 29 * DAY));
            at("2028-02-29T12:00:00Z");
            assertThat(throttler.tryAcquire("m", "k")).isEqualTo(allow(2, 0, 12 * HOUR));
            assertThat(throttler.tryAcquire("m", "k"))
                    .as("the leap day is still February")
                    .isEqualTo(reject(2, 0, 12 * HOUR, 12 * HOUR));

            Throttler days = throttler(window("d", 1, CalendarWindow.Unit.DAY, this.utc));
            at("2028-02-28T23:59:59.999Z");
            assertThat(days.tryAcquire("d", "k")).isEqualTo(allow(1, 0, 1));
            advance(1);
            assertThat(days.tryAcquire("d", "k"))
                    .as("February 29th, 2028, a day of its own")
                    .isEqualTo(allow(1, 0, DAY));
            assertThat(days.tryAcquire("d", "k")).isEqualTo(reject(1, 0, DAY, DAY));
            advance(DAY);
            assertThat(days.tryAcquire("d", "k").allowed()).as("March 1st").isTrue();
        }

        @Test
        void theDayTheClocksGoForwardInBerlinLastsTwentyThreeHoursAndItsMonthAnHourLessThanThirtyOneDays() {
            // 2026-03-29, the last Sunday of March: 02:00 CET becomes 03:00 CEST
            at("2026-03-28T23:00:00Z");
            Throttler throttler = throttlerOrRefused(window("d", 1, CalendarWindow.Unit.DAY, this.berlin));
            if (throttler == null) {
                return;
            }
            assertThat(throttler.tryAcquire("d", "k"))
                    .as("midnight in Berlin; the day ends 23 hours later")
                    .isEqualTo(allow(1, 0, 23 * HOUR));
            at("2026-03-29T21:59:59Z");
            assertThat(throttler.tryAcquire("d", "k")).isEqualTo(reject(1, 0, 1_000, 1_000));
            advance(1_000);
            assertThat(throttler.tryAcquire("d", "k"))
                    .as("Monday in Berlin, 22:00 UTC; a day of 24 hours again")
                    .isEqualTo(allow(1, 0, 24 * HOUR));

            Throttler months = throttler(window("m", 1, CalendarWindow.Unit.MONTH, this.berlin));
            at("2026-02-28T23:00:00Z");
            assertThat(months.tryAcquire("m", "k"))
                    .as("March in Berlin: from 23:00 UTC to 22:00 UTC 31 days later")
                    .isEqualTo(allow(1, 0, 31 * DAY - HOUR));
            at("2026-03-31T21:59:59.999Z");
            assertThat(months.tryAcquire("m", "k")).isEqualTo(reject(1, 0, 1, 1));
            advance(1);
            assertThat(months.tryAcquire("m", "k").allowed())
                    .as("April in Berlin")
                    .isTrue();
        }

        @Test
        void aWeekRunsFromMondayToMonday() {
            // 2026-01-01 is a Thursday
            Throttler throttler = throttlerOrRefused(window("w", 2, CalendarWindow.Unit.WEEK, this.utc));
            if (throttler == null) {
                return;
            }
            assertThat(throttler.tryAcquire("w", "k", 2))
                    .as("the week began on Monday, December 29th: 4 days left")
                    .isEqualTo(allow(2, 0, 4 * DAY));
            at("2026-01-04T23:59:59Z");
            assertThat(throttler.tryAcquire("w", "k")).isEqualTo(reject(2, 0, 1_000, 1_000));
            at("2026-01-05T00:00:00Z");
            assertThat(throttler.tryAcquire("w", "k")).isEqualTo(allow(2, 1, 7 * DAY));
        }

        @Test
        void aMonthFromTheThirtyFirstStartsOnTheLastDayOfAShorterMonth() {
            Policy billing =
                    FixedWindowPolicy.calendar("bill", 1, new CalendarWindow(CalendarWindow.Unit.MONTH, this.utc, 31));
            at("2026-04-15T00:00:00Z");
            Throttler throttler = throttlerOrRefused(billing);
            if (throttler == null) {
                return;
            }
            assertThat(throttler.tryAcquire("bill", "k"))
                    .as("from March 31st to April 30th, a month of 30 days")
                    .isEqualTo(allow(1, 0, 15 * DAY));
            at("2026-04-29T23:59:59Z");
            assertThat(throttler.tryAcquire("bill", "k")).isEqualTo(reject(1, 0, 1_000, 1_000));
            at("2026-04-30T00:00:00Z");
            assertThat(throttler.tryAcquire("bill", "k"))
                    .as("April 30th to May 31st")
                    .isEqualTo(allow(1, 0, 31 * DAY));
            at("2026-02-27T12:00:00Z");
            assertThat(throttler.tryAcquire("bill", "february"))
                    .as("January 31st to February 28th")
                    .isEqualTo(allow(1, 0, 12 * HOUR));
            at("2026-02-28T00:00:00Z");
            assertThat(throttler.tryAcquire("bill", "february"))
                    .as("February 28th to March 31st")
                    .isEqualTo(allow(1, 0, 31 * DAY));
        }

        @Test
        void eachCallersMonthStartsOnTheAnchorDayItIsBoundWithWhileOthersKeepThePolicysOwn() {
            at("2026-01-20T12:00:00Z");
            Throttler throttler = throttlerOrRefused(window("m", 1, CalendarWindow.Unit.MONTH, this.utc));
            if (throttler == null) {
                return;
            }
            BoundPolicy policy = throttler.bound("m");
            BoundPolicy billedOnThe15th = policy.anchorDay(15);
            BoundPolicy billedOnThe31st = policy.anchorDay(31);
            assertThat(policy.anchorDay(15)).as("one view per day, kept").isSameAs(billedOnThe15th);
            assertThat(billedOnThe15th.tryAcquire("customer-15", 1))
                    .as("January 15th to February 15th")
                    .isEqualTo(allow(1, 0, 26 * DAY - 12 * HOUR));
            assertThat(billedOnThe31st.tryAcquire("customer-31", 1))
                    .as("December 31st to January 31st")
                    .isEqualTo(allow(1, 0, 11 * DAY - 12 * HOUR));
            assertThat(policy.tryAcquire("customer-1", 1))
                    .as("the policy's own month, from the 1st")
                    .isEqualTo(allow(1, 0, 11 * DAY + 12 * HOUR));
            at("2026-02-01T00:00:00Z");
            assertThat(policy.tryAcquire("customer-1", 1)).isEqualTo(allow(1, 0, 28 * DAY));
            assertThat(billedOnThe15th.tryAcquire("customer-15", 1))
                    .as("still the month from January 15th")
                    .isEqualTo(reject(1, 0, 14 * DAY, 14 * DAY));
            assertThat(billedOnThe31st.tryAcquire("customer-31", 1))
                    .as("January 31st to February 28th, a month of its own")
                    .isEqualTo(allow(1, 0, 27 * DAY));
            assertThat(billedOnThe31st.tryAcquire("customer-31", 1)).isEqualTo(reject(1, 0, 27 * DAY, 27 * DAY));
            at("2026-02-15T00:00:00Z");
            assertThat(billedOnThe15th.tryAcquire("customer-15", 1))
                    .as("February 15th to March 15th")
                    .isEqualTo(allow(1, 0, 28 * DAY));
            at("2026-02-28T00:00:00Z");
            assertThat(billedOnThe31st.tryAcquire("customer-31", 1))
                    .as("February's last day stands for the 31st: to March 31st")
                    .isEqualTo(allow(1, 0, 31 * DAY));
        }

        @Test
        void aDebtIsCarriedIntoTheNextMonthAndPaidThere() {
            at("2026-01-31T12:00:00Z");
            Throttler throttler = throttlerOrRefused(window("m", 10, CalendarWindow.Unit.MONTH, this.utc));
            if (throttler == null || !chargesAfterTheCall()) {
                return;
            }
            assertThat(throttler.estimate("m", "k", 1).settle(15))
                    .as("5 carried into February")
                    .isEqualTo(5);
            assertThat(throttler.peek("m", "k"))
                    .as("refused until February, which ends 28 days later")
                    .isEqualTo(reject(10, 0, 12 * HOUR, 12 * HOUR + 28 * DAY));
            at("2026-02-01T00:00:00Z");
            assertThat(throttler.tryAcquire("m", "k", 5))
                    .as("February starts with the debt")
                    .isEqualTo(allow(10, 0, 28 * DAY));
            at("2026-03-01T00:00:00Z");
            assertThat(throttler.peek("m", "k").remaining())
                    .as("March owes nothing")
                    .isEqualTo(10);
        }

        @Test
        void aCallMayWaitForTheNextDayAndARefundByItsReceiptGivesBackToThatDay() {
            at("2026-01-01T23:59:00Z");
            Throttler throttler = throttlerOrRefused(window("d", 1, CalendarWindow.Unit.DAY, this.utc));
            if (throttler == null) {
                return;
            }
            Decision today = throttler.tryAcquire("d", "k");
            assertThat(today).isEqualTo(allow(1, 0, 60_000));
            if (reservesTurns()) {
                Decision tomorrow = throttler.bound("d").reserve("k", 1, Duration.ofMinutes(1));
                assertThat(tomorrow)
                        .isEqualTo(Decision.reserved(
                                1,
                                0,
                                60_000 + DAY,
                                60_000 + DAY,
                                Instant.parse("2026-01-02T00:00:00Z").toEpochMilli(),
                                60_000));
                throttler.bound("d").refund("k", 1, today);
                assertThat(throttler.peek("d", "k").allowed())
                        .as("today's call gives nothing back while tomorrow holds a reservation")
                        .isFalse();
                throttler.bound("d").refund("k", 1, tomorrow);
                at("2026-01-02T00:00:00Z");
                assertThat(throttler.peek("d", "k").remaining())
                        .as("tomorrow's reservation given back")
                        .isEqualTo(1);
            } else {
                advance(60_000);
                throttler.bound("d").refund("k", 1, today);
                assertThat(throttler.tryAcquire("d", "k"))
                        .as("yesterday's call gives nothing back to today")
                        .isEqualTo(allow(1, 0, DAY));
                assertThat(throttler.tryAcquire("d", "k").allowed()).isFalse();
            }
        }
    }

    @Nested
    class SlidingLog {

        private final SlidingLogPolicy metabase = SlidingLogPolicy.withDefaults("email");

        @Test
        void metabasesDelaysGrowAsFifteenSecondsTimesOverToTheOnePointFive() {
            Throttler throttler = throttler(this.metabase);
            for (int i = 1; i <= 10; i++) {
                assertThat(throttler.tryAcquire("email", "cam@metabase.com")).isEqualTo(allow(10, 10 - i, 3_600_000));
            }
            long[] delays = {15_000, 42_426, 77_942, 120_000, 167_705, 220_454};
            for (long delay : delays) {
                assertThat(throttler.tryAcquire("email", "cam@metabase.com"))
                        .isEqualTo(reject(10, 0, delay, 3_600_000));
                advance(delay - 1);
                assertThat(throttler.tryAcquire("email", "cam@metabase.com").retryAfterMillis())
                        .isEqualTo(1);
                advance(1);
                assertThat(throttler.tryAcquire("email", "cam@metabase.com")).isEqualTo(allow(10, 0, 3_600_000));
            }
        }

        @Test
        void attemptsOlderThanTheTtlStopCounting() {
            Throttler throttler =
                    throttler(new SlidingLogPolicy("s", 2, Duration.ofSeconds(10), Duration.ofSeconds(1), 1));
            assertThat(throttler.tryAcquire("s", "k")).isEqualTo(allow(2, 1, 10_000));
            advance(4_000);
            assertThat(throttler.tryAcquire("s", "k")).isEqualTo(allow(2, 0, 10_000));
            assertThat(throttler.tryAcquire("s", "k")).isEqualTo(reject(2, 0, 1_000, 10_000));
            advance(5_999);
            assertThat(throttler.peek("s", "k")).isEqualTo(allow(2, 0, 4_001));
            advance(1);
            assertThat(throttler.peek("s", "k"))
                    .as("the first attempt is exactly ttl old: dropped")
                    .isEqualTo(allow(2, 1, 4_000));
            advance(4_000);
            assertThat(throttler.peek("s", "k")).isEqualTo(allow(2, 2, 0));
            assertThat(throttler.tryAcquire("s", "k")).isEqualTo(allow(2, 1, 10_000));
        }

        @Test
        void theLiveAttemptsAreCountedWhileTheOldestExpireOneByOne() {
            // delays of 1 s x over: the log grows to six attempts, then loses its oldest as they turn ttl old
            Throttler throttler =
                    throttler(new SlidingLogPolicy("s", 3, Duration.ofSeconds(10), Duration.ofSeconds(1), 1));
            assertThat(throttler.tryAcquire("s", "k")).isEqualTo(allow(3, 2, 10_000));
            advance(1_000);
            assertThat(throttler.tryAcquire("s", "k")).isEqualTo(allow(3, 1, 10_000));
            advance(1_000);
            assertThat(throttler.tryAcquire("s", "k")).isEqualTo(allow(3, 0, 10_000));
            assertThat(throttler.tryAcquire("s", "k")).isEqualTo(reject(3, 0, 1_000, 10_000));
            advance(1_000);
            assertThat(throttler.tryAcquire("s", "k")).as("at 3 s, over 1").isEqualTo(allow(3, 0, 10_000));
            advance(2_000);
            assertThat(throttler.tryAcquire("s", "k")).as("at 5 s, over 2").isEqualTo(allow(3, 0, 10_000));
            advance(3_000);
            assertThat(throttler.tryAcquire("s", "k")).as("at 8 s, over 3").isEqualTo(allow(3, 0, 10_000));
            advance(2_000);
            assertThat(throttler.peek("s", "k"))
                    .as("at 10 s the attempt at 0 s stopped counting: five live, over 3")
                    .isEqualTo(reject(3, 0, 1_000, 8_000));
            advance(1_000);
            assertThat(throttler.tryAcquire("s", "k"))
                    .as("at 11 s four live (1 s is ttl old too), over 2")
                    .isEqualTo(allow(3, 0, 10_000));
            assertThat(throttler.tryAcquire("s", "k"))
                    .as(
                            "five live again, over 3 (3 s after 11 s), but the attempts at 2 s and 3 s stop counting at 12 s"
                                    + " and 13 s: over 1 at 13 s, 1 s after 11 s has passed")
                    .isEqualTo(reject(3, 0, 2_000, 10_000));
            advance(8_000);
            assertThat(throttler.peek("s", "k"))
                    .as("at 19 s only the attempt at 11 s counts")
                    .isEqualTo(allow(3, 2, 2_000));
            advance(2_000);
            assertThat(throttler.peek("s", "k")).isEqualTo(allow(3, 3, 0));
        }

        @Test
        void aRefusedAttemptIsNotRecorded() {
            Throttler throttler =
                    throttler(new SlidingLogPolicy("s", 1, Duration.ofMinutes(1), Duration.ofSeconds(10), 1));
            assertThat(throttler.tryAcquire("s", "k")).isEqualTo(allow(1, 0, 60_000));
            for (int i = 0; i < 5; i++) {
                advance(1_000);
                assertThat(throttler.tryAcquire("s", "k").allowed()).isFalse();
            }
            advance(5_000);
            assertThat(throttler.tryAcquire("s", "k"))
                    .as("10 s after the last allowed attempt, refusals ignored")
                    .isEqualTo(allow(1, 0, 60_000));
        }

        @Test
        void refundRemovesTheMostRecentAttempt() {
            Throttler throttler = throttler(this.metabase);
            for (int i = 0; i < 10; i++) {
                if (i > 0) {
                    advance(1_000);
                }
                throttler.tryAcquire("email", "k");
            }
            throttler.refund("email", "k", 1);
            assertThat(throttler.peek("email", "k"))
                    .as("the attempt at 9 s is gone, the one at 8 s is the newest: neutral an hour after it")
                    .isEqualTo(allow(10, 1, 3_599_000));
            assertThat(throttler.tryAcquire("email", "k")).isEqualTo(allow(10, 0, 3_600_000));
            assertThat(throttler.tryAcquire("email", "k")).isEqualTo(reject(10, 0, 15_000, 3_600_000));
        }

        @Test
        void costAboveOneIsNeverGranted() {
            Throttler throttler = throttler(this.metabase);
            assertThat(throttler.tryAcquire("email", "k", 2)).isEqualTo(Decision.neverAllowed(10));
        }
    }

    @Nested
    class Lockout {

        private final LockoutPolicy lucia = LockoutPolicy.of("login", LUCIA_LADDER);

        @Test
        void theLadderClimbsOneTwoFourUpToThreeHundredSecondsAndStaysThere() {
            Throttler throttler = throttler(this.lucia);
            assertThat(throttler.tryAcquire("login", "alice")).isEqualTo(allow(1, 0, 3_600_000));
            long[] ladder = {1, 2, 4, 8, 16, 30, 60, 180, 300, 300, 300};
            for (long wait : ladder) {
                long waitMillis = wait * 1000;
                assertThat(throttler.tryAcquire("login", "alice")).isEqualTo(reject(1, 0, waitMillis, 3_600_000));
                advance(waitMillis - 1);
                assertThat(throttler.tryAcquire("login", "alice"))
                        .isEqualTo(reject(1, 0, 1, 3_600_000 - waitMillis + 1));
                advance(1);
                assertThat(throttler.tryAcquire("login", "alice")).isEqualTo(allow(1, 0, 3_600_000));
            }
        }

        @Test
        void resetStartsTheLadderOver() {
            Throttler throttler = throttler(this.lucia);
            for (int i = 0; i < 5; i++) {
                throttler.tryAcquire("login", "alice");
                advance(60_000);
            }
            throttler.reset("login", "alice");
            assertThat(throttler.peek("login", "alice")).isEqualTo(allow(1, 1, 0));
            assertThat(throttler.tryAcquire("login", "alice")).isEqualTo(allow(1, 0, 3_600_000));
            assertThat(throttler.tryAcquire("login", "alice")).isEqualTo(reject(1, 0, 1_000, 3_600_000));
        }

        @Test
        void idleStateExpiresAfterExpireAfter() {
            Throttler throttler = throttler(new LockoutPolicy("login", LUCIA_LADDER, Duration.ofMinutes(10)));
            for (int i = 0; i < 9; i++) {
                throttler.tryAcquire("login", "alice");
                advance(300_000);
            }
            assertThat(throttler.tryAcquire("login", "alice")).isEqualTo(allow(1, 0, 600_000));
            advance(599_999);
            assertThat(throttler.peek("login", "alice")).isEqualTo(allow(1, 1, 1));
            advance(1);
            assertThat(throttler.peek("login", "alice")).isEqualTo(allow(1, 1, 0));
            throttler.tryAcquire("login", "alice");
            assertThat(throttler.tryAcquire("login", "alice"))
                    .as("back on the first rung")
                    .isEqualTo(reject(1, 0, 1_000, 600_000));
        }

        @Test
        void refundStepsBackOneRung() {
            Throttler throttler = throttler(this.lucia);
            throttler.tryAcquire("login", "alice");
            throttler.refund("login", "alice", 1);
            assertThat(throttler.peek("login", "alice"))
                    .as("the first attempt given back")
                    .isEqualTo(allow(1, 1, 0));
            throttler.tryAcquire("login", "alice");
            advance(1_000);
            assertThat(throttler.tryAcquire("login", "alice")).isEqualTo(allow(1, 0, 3_600_000));
            throttler.refund("login", "alice", 1);
            assertThat(throttler.tryAcquire("login", "alice"))
                    .as("the refunded attempt's rung is free again")
                    .isEqualTo(allow(1, 0, 3_600_000));
            assertThat(throttler.tryAcquire("login", "alice")).isEqualTo(reject(1, 0, 2_000, 3_600_000));
        }
    }

    @Nested
    class EveryAlgorithm {

        private final List<Policy> policies = runnable(List.of(
                TokenBucketPolicy.of("tb", 5, Duration.ofHours(1)),
                new GcraPolicy("gcra", 5, Duration.ofHours(1)),
                new FixedWindowPolicy("fw", 5, Duration.ofHours(1)),
                new SlidingLogPolicy("log", 5, Duration.ofHours(1), Duration.ofHours(1), 1.5),
                LockoutPolicy.of("lock", seconds(3600)),
                new ConcurrencyPolicy("slots", 5, Duration.ofHours(1))));

        /** Every algorithm the store runs. */
        private List<Policy> runnable(List<Policy> every) {
            return runsConcurrency()
                    ? every
                    : every.stream()
                            .filter((policy) -> !(policy instanceof ConcurrencyPolicy))
                            .toList();
        }

        @Test
        void whileTheClockStandsStillEachPolicyGrantsExactlyItsQuota() {
            Throttler throttler = throttler(this.policies.toArray(Policy[]::new));
            for (Policy policy : this.policies) {
                int passed = 0;
                for (int i = 0; i < 50; i++) {
                    passed += throttler.tryAcquire(policy.name(), "k").allowed() ? 1 : 0;
                }
                assertThat(passed).as(policy.name()).isEqualTo(policy.quota());
            }
        }

        @Test
        void peekChangesNothing() {
            Throttler throttler = throttler(this.policies.toArray(Policy[]::new));
            for (Policy policy : this.policies) {
                throttler.tryAcquire(policy.name(), "k");
                Decision first = throttler.peek(policy.name(), "k");
                for (int i = 0; i < 20; i++) {
                    assertThat(throttler.peek(policy.name(), "k"))
                            .as(policy.name())
                            .isEqualTo(first);
                }
                int passed = 1;
                for (int i = 0; i < 20; i++) {
                    passed += throttler.tryAcquire(policy.name(), "k").allowed() ? 1 : 0;
                }
                assertThat(passed).as(policy.name()).isEqualTo(policy.quota());
            }
        }

        @Test
        void resetForgetsTheKeyAndOnlyThatKey() {
            Throttler throttler = throttler(this.policies.toArray(Policy[]::new));
            for (Policy policy : this.policies) {
                for (int i = 0; i < 10; i++) {
                    throttler.tryAcquire(policy.name(), "a");
                    throttler.tryAcquire(policy.name(), "b");
                }
                Decision fresh = throttler.peek(policy.name(), "never-used");
                throttler.reset(policy.name(), "a");
                assertThat(throttler.peek(policy.name(), "a")).as(policy.name()).isEqualTo(fresh);
                assertThat(throttler.peek(policy.name(), "b").allowed())
                        .as(policy.name())
                        .isFalse();
            }
        }

        @Test
        void afterTheIdleExpiryEveryKeyIsNeutralAgain() {
            Throttler throttler = throttler(this.policies.toArray(Policy[]::new));
            for (Policy policy : this.policies) {
                for (int i = 0; i < 10; i++) {
                    throttler.tryAcquire(policy.name(), "k");
                }
            }
            advance(Duration.ofHours(5).toMillis());
            for (Policy policy : this.policies) {
                assertThat(throttler.peek(policy.name(), "k"))
                        .as(policy.name())
                        .isEqualTo(throttler.peek(policy.name(), "never-used"));
                assertThat(throttler.peek(policy.name(), "k").remaining())
                        .as(policy.name())
                        .isEqualTo(policy.quota());
            }
        }

        @Test
        void theTracesCoverEveryAlgorithm() {
            List<Algorithm<?>> every = Algorithm.all().stream()
                    .filter((algorithm) -> runsConcurrency() || !algorithm.id().equals("concurrency"))
                    .toList();
            assertThat(this.policies).extracting(Policy::algorithm).containsExactlyInAnyOrderElementsOf(every);
        }

        /**
         * One call throttled by two policies, a sibling first and a later one that refuses: the call
         * is refused, and what the sibling took is given back, so the sibling is as before the call.
         */
        @Test
        void aRefusedCallFollowedByARefundOfASiblingsCallLeavesTheSiblingAsBefore() {
            FixedWindowPolicy later = new FixedWindowPolicy("later", 1, Duration.ofHours(1));
            List<Policy> siblings = List.of(
                    this.policies.get(0),
                    this.policies.get(1),
                    this.policies.get(2),
                    this.policies.get(3),
                    new LockoutPolicy("ladder", seconds(1, 2, 4), Duration.ofHours(1)));
            List<Policy> all = new ArrayList<>(siblings);
            all.add(later);
            Throttler throttler = throttler(all.toArray(Policy[]::new));
            assertThat(throttler.tryAcquire("later", "k").allowed()).isTrue();
            for (Policy sibling : siblings) {
                String name = sibling.name();
                int cost = Math.min(2, sibling.maxCost());
                assertThat(throttler.tryAcquire(name, "k").allowed()).as(name).isTrue();
                // an earlier call leaves the sibling in use; a second later (the ladder's first rung) the
                // next call passes
                advance(1_000);
                Decision before = throttler.peek(name, "k");
                assertThat(throttler.tryAcquire(name, "k", cost).allowed())
                        .as(name)
                        .isTrue();
                assertThat(throttler.peek(name, "k"))
                        .as(name + " took its part")
                        .isNotEqualTo(before);
                Decision laterBefore = throttler.peek("later", "k");
                assertThat(throttler.tryAcquire("later", "k").allowed())
                        .as("the later policy refuses")
                        .isFalse();
                throttler.refund(name, "k", cost);
                assertThat(throttler.peek(name, "k")).as(name).isEqualTo(before);
                assertThat(throttler.peek("later", "k"))
                        .as("a refusal writes nothing")
                        .isEqualTo(laterBefore);
            }
        }

        @Test
        void keysAreIndependent() {
            Throttler throttler = throttler(this.policies.toArray(Policy[]::new));
            for (Policy policy : this.policies) {
                for (int i = 0; i < 10; i++) {
                    throttler.tryAcquire(policy.name(), "busy");
                }
                assertThat(throttler.tryAcquire(policy.name(), "quiet").allowed())
                        .as(policy.name())
                        .isTrue();
            }
        }
    }

    /**
     * A clock that steps back (Redis time after a failover, an NTP correction) finds state stamped
     * after now. Both stores keep it, conservatively: taking it for no state would hand every key
     * used in the last moments a fresh quota.
     */
    @Nested
    class ClockSteppingBack {

        @Test
        void aTokenBucketRefilledAfterNowHasEarnedNothingYet() {
            Throttler throttler = throttler(TokenBucketPolicy.of("tb", 10, Duration.ofSeconds(2)));
            assertThat(throttler.tryAcquire("tb", "ip", 10)).isEqualTo(allow(10, 0, 20_000));
            advance(-50);
            assertThat(throttler.tryAcquire("tb", "ip", 1)).isEqualTo(reject(10, 0, 2_050, 20_050));
            assertThat(throttler.peek("tb", "ip")).isEqualTo(reject(10, 0, 2_050, 20_050));
            throttler.refund("tb", "ip", 3);
            assertThat(throttler.peek("tb", "ip"))
                    .as("the refund keeps refilledAt")
                    .isEqualTo(allow(10, 3, 14_050));
            assertThat(throttler.tryAcquire("tb", "ip", 3)).isEqualTo(allow(10, 0, 20_050));
            advance(2_050);
            assertThat(throttler.tryAcquire("tb", "ip", 1))
                    .as("one period after refilledAt")
                    .isEqualTo(allow(10, 0, 20_000));
        }

        @Test
        void aGcraScoreIsMeasuredFromTheEarlierNow() {
            Throttler throttler = throttler(new GcraPolicy("api", 3, Duration.ofSeconds(60)));
            for (int i = 0; i < 3; i++) {
                throttler.tryAcquire("api", "u");
            }
            advance(-50);
            assertThat(throttler.tryAcquire("api", "u")).isEqualTo(reject(3, 0, 20_050, 60_050));
            assertThat(throttler.peek("api", "u")).isEqualTo(reject(3, 0, 20_050, 60_050));
            advance(20_050);
            assertThat(throttler.tryAcquire("api", "u")).isEqualTo(allow(3, 0, 60_000));
        }

        @Test
        void aFixedWindowThatStartedAfterNowIsStillTheCurrentOne() {
            Throttler throttler = throttler(new FixedWindowPolicy("fw", 3, Duration.ofSeconds(10)));
            for (int i = 0; i < 3; i++) {
                throttler.tryAcquire("fw", "k");
            }
            advance(-50);
            assertThat(throttler.tryAcquire("fw", "k")).isEqualTo(reject(3, 0, 10_050, 10_050));
            assertThat(throttler.peek("fw", "k")).isEqualTo(reject(3, 0, 10_050, 10_050));
            throttler.refund("fw", "k", 1);
            assertThat(throttler.peek("fw", "k")).isEqualTo(allow(3, 1, 10_050));
            assertThat(throttler.tryAcquire("fw", "k")).isEqualTo(allow(3, 0, 10_050));
            advance(10_050);
            assertThat(throttler.tryAcquire("fw", "k"))
                    .as("the window ended on time")
                    .isEqualTo(allow(3, 2, 10_000));
        }

        @Test
        void aSlidingLogKeepsAttemptsAfterNowAndRecordsANewOneNoEarlierThanTheNewest() {
            Throttler throttler =
                    throttler(new SlidingLogPolicy("s", 3, Duration.ofSeconds(10), Duration.ofSeconds(1), 1));
            assertThat(throttler.tryAcquire("s", "k")).isEqualTo(allow(3, 2, 10_000));
            assertThat(throttler.tryAcquire("s", "k")).isEqualTo(allow(3, 1, 10_000));
            advance(-50);
            assertThat(throttler.tryAcquire("s", "k"))
                    .as("recorded at the newest time, 50 ms ahead")
                    .isEqualTo(allow(3, 0, 10_050));
            assertThat(throttler.tryAcquire("s", "k")).isEqualTo(reject(3, 0, 1_050, 10_050));
            assertThat(throttler.peek("s", "k")).isEqualTo(reject(3, 0, 1_050, 10_050));
            throttler.refund("s", "k", 1);
            assertThat(throttler.peek("s", "k")).isEqualTo(allow(3, 1, 10_050));
            assertThat(throttler.tryAcquire("s", "k")).isEqualTo(allow(3, 0, 10_050));
            advance(1_050);
            assertThat(throttler.tryAcquire("s", "k")).isEqualTo(allow(3, 0, 10_000));
        }

        @Test
        void aSlidingLogDoesNotForgetItsHourWhenTheClockStepsBackFortyMinutes() {
            Throttler throttler = throttler(SlidingLogPolicy.withDefaults("email"));
            for (int i = 0; i < 10; i++) {
                throttler.tryAcquire("email", "k");
            }
            advance(-Duration.ofMinutes(40).toMillis());
            assertThat(throttler.tryAcquire("email", "k")).isEqualTo(reject(10, 0, 2_415_000, 6_000_000));
        }

        /** What a failover of Redis, whose clock is 50 ms behind, did to every key written just before. */
        @Test
        void aFiftyMillisecondStepBackHandsNoAlgorithmAFreshQuota() {
            List<Policy> policies = List.of(
                    TokenBucketPolicy.of("tb", 3, Duration.ofSeconds(2)),
                    new GcraPolicy("gcra", 3, Duration.ofSeconds(6)),
                    new FixedWindowPolicy("fw", 3, Duration.ofSeconds(10)),
                    new SlidingLogPolicy("log", 3, Duration.ofHours(1), Duration.ofSeconds(15), 1.5),
                    LockoutPolicy.of("lock", LUCIA_LADDER));
            Throttler throttler = throttler(policies.toArray(Policy[]::new));
            List<Decision> before = new ArrayList<>();
            for (Policy policy : policies) {
                for (int i = 0; i < policy.quota(); i++) {
                    assertThat(throttler.tryAcquire(policy.name(), "k").allowed())
                            .as(policy.name())
                            .isTrue();
                }
                before.add(throttler.peek(policy.name(), "k"));
            }
            advance(-50);
            for (int i = 0; i < policies.size(); i++) {
                String name = policies.get(i).name();
                Decision refused = throttler.tryAcquire(name, "k");
                assertThat(refused.allowed()).as(name).isFalse();
                assertThat(refused.retryAfterMillis())
                        .as(name + ": 50 ms longer, from the earlier now")
                        .isEqualTo(before.get(i).retryAfterMillis() + 50);
                assertThat(refused.nextUnitAfterMillis()).as(name).isEqualTo(refused.retryAfterMillis());
                assertThat(throttler.peek(name, "k")).as(name).isEqualTo(refused);
            }
        }

        @Test
        void aReceiptUndoesItsOwnCallAfterTheClockSteppedBack() {
            Throttler throttler = throttler(
                    new FixedWindowPolicy("fw", 3, Duration.ofSeconds(10)),
                    new SlidingLogPolicy("s", 3, Duration.ofSeconds(10), Duration.ofSeconds(1), 1),
                    new GcraPolicy("gcra", 2, Duration.ofSeconds(10)),
                    LockoutPolicy.of("lock", LUCIA_LADDER));
            Decision window = throttler.tryAcquire("fw", "k", 2);
            Decision first = throttler.tryAcquire("s", "k");
            Decision score = throttler.tryAcquire("gcra", "k");
            Decision attempt = throttler.tryAcquire("lock", "k");
            advance(-50);
            Decision second = throttler.tryAcquire("s", "k");
            throttler.bound("fw").refund("k", 2, window);
            assertThat(throttler.peek("fw", "k"))
                    .as("the window starting 50 ms ahead is still the call's")
                    .isEqualTo(allow(3, 3, 0));
            throttler.bound("s").refund("k", 1, second);
            assertThat(throttler.peek("s", "k"))
                    .as("one of the two attempts recorded at the same time is gone")
                    .isEqualTo(allow(3, 2, 10_050));
            throttler.bound("s").refund("k", 1, first);
            assertThat(throttler.peek("s", "k")).isEqualTo(allow(3, 3, 0));
            throttler.bound("gcra").refund("k", 1, score);
            assertThat(throttler.peek("gcra", "k"))
                    .as("its whole span given back: the score is where the call found it")
                    .isEqualTo(allow(2, 1, 50));
            throttler.bound("lock").refund("k", 1, attempt);
            assertThat(throttler.peek("lock", "k")).isEqualTo(allow(1, 1, 0));
        }

        @Test
        void theNextUnitIsCountedFromTheEarlierNow() {
            Throttler throttler = throttler(
                    new FixedWindowPolicy("fw", 3, Duration.ofSeconds(10)),
                    TokenBucketPolicy.of("tb", 3, Duration.ofSeconds(2)),
                    LockoutPolicy.of("lock", LUCIA_LADDER));
            throttler.tryAcquire("fw", "k");
            throttler.tryAcquire("tb", "k");
            throttler.tryAcquire("lock", "k");
            advance(-50);
            assertThat(throttler.tryAcquire("fw", "k").nextUnitAfterMillis()).isEqualTo(10_050);
            assertThat(throttler.tryAcquire("tb", "k").nextUnitAfterMillis()).isEqualTo(2_050);
            assertThat(throttler.tryAcquire("lock", "k").nextUnitAfterMillis())
                    .as("refused: its own wait")
                    .isEqualTo(1_050);
        }

        @Test
        void aLockoutWaitRunsFromTheLastAllowedAttemptEvenAfterNow() {
            Throttler throttler = throttler(LockoutPolicy.of("login", LUCIA_LADDER));
            assertThat(throttler.tryAcquire("login", "alice")).isEqualTo(allow(1, 0, 3_600_000));
            advance(-50);
            assertThat(throttler.tryAcquire("login", "alice")).isEqualTo(reject(1, 0, 1_050, 3_600_050));
            assertThat(throttler.peek("login", "alice")).isEqualTo(reject(1, 0, 1_050, 3_600_050));
            advance(1_050);
            assertThat(throttler.tryAcquire("login", "alice")).isEqualTo(allow(1, 0, 3_600_000));
            assertThat(throttler.tryAcquire("login", "alice")).isEqualTo(reject(1, 0, 2_000, 3_600_000));
        }
    }

    /**
     * A refund hands back the decision of the call it undoes, and gives back exactly what that call
     * took, or nothing once that is gone: never what a later call took.
     */
    @Nested
    class Receipts {

        private void refund(Throttler throttler, String policy, int cost, Decision taken) {
            throttler.bound(policy).refund("k", cost, taken);
        }

        /** The trace that exposed it: a call of one window refunded in the next freed a unit of the new window. */
        @Test
        void aFixedWindowRefundInTheNextWindowGivesBackNothingOfIt() {
            Throttler throttler = throttler(new FixedWindowPolicy("fw", 2, Duration.ofSeconds(10)));
            Decision first = throttler.tryAcquire("fw", "k");
            advance(9_900);
            Decision late = throttler.tryAcquire("fw", "k");
            advance(100);
            assertThat(throttler.tryAcquire("fw", "k")).isEqualTo(allow(2, 1, 10_000));
            assertThat(throttler.tryAcquire("fw", "k")).isEqualTo(allow(2, 0, 10_000));
            refund(throttler, "fw", 1, late);
            refund(throttler, "fw", 1, first);
            assertThat(throttler.tryAcquire("fw", "k"))
                    .as("two failures charged in a window of two, not three")
                    .isEqualTo(reject(2, 0, 10_000, 10_000));
        }

        @Test
        void aFixedWindowRefundInItsOwnWindowGivesItsUnitsBack() {
            Throttler throttler = throttler(new FixedWindowPolicy("fw", 3, Duration.ofSeconds(10)));
            Decision taken = throttler.tryAcquire("fw", "k", 2);
            advance(2_000);
            throttler.tryAcquire("fw", "k");
            refund(throttler, "fw", 2, taken);
            assertThat(throttler.peek("fw", "k"))
                    .as("the window keeps its start")
                    .isEqualTo(allow(3, 2, 8_000));
        }

        /** The trace that exposed it: a refund removed the newest attempt instead of its own. */
        @Test
        void aSlidingLogRefundRemovesItsOwnAttemptNotTheNewest() {
            Throttler throttler =
                    throttler(new SlidingLogPolicy("s", 2, Duration.ofSeconds(10), Duration.ofSeconds(1), 1));
            Decision first = throttler.tryAcquire("s", "k");
            advance(4_000);
            throttler.tryAcquire("s", "k");
            refund(throttler, "s", 1, first);
            assertThat(throttler.peek("s", "k"))
                    .as("the attempt 4 s in is left, 10 s to live")
                    .isEqualTo(allow(2, 1, 10_000));
            advance(6_000);
            assertThat(throttler.peek("s", "k"))
                    .as("not the first attempt, which would be gone by now")
                    .isEqualTo(allow(2, 1, 4_000));
        }

        @Test
        void aSlidingLogRefundOfAnAttemptThatAgedOutGivesBackNothing() {
            Throttler throttler =
                    throttler(new SlidingLogPolicy("s", 1, Duration.ofSeconds(10), Duration.ofSeconds(20), 1));
            Decision first = throttler.tryAcquire("s", "k");
            advance(10_000);
            assertThat(throttler.tryAcquire("s", "k")).isEqualTo(allow(1, 0, 10_000));
            refund(throttler, "s", 1, first);
            assertThat(throttler.tryAcquire("s", "k")).isEqualTo(reject(1, 0, 10_000, 10_000));
        }

        /** The trace that exposed it: a stale refund gave a third pass in a burst of two. */
        @Test
        void aStaleGcraRefundGivesNoThirdPassInABurstOfTwo() {
            Throttler throttler = throttler(new GcraPolicy("api", 2, Duration.ofSeconds(10)));
            Decision stale = throttler.tryAcquire("api", "k");
            advance(10_000);
            assertThat(throttler.tryAcquire("api", "k")).isEqualTo(allow(2, 1, 5_000));
            assertThat(throttler.tryAcquire("api", "k")).isEqualTo(allow(2, 0, 10_000));
            refund(throttler, "api", 1, stale);
            assertThat(throttler.tryAcquire("api", "k")).isEqualTo(reject(2, 0, 5_000, 10_000));
        }

        @Test
        void aGcraRefundGivesBackThePartOfItsIntervalStillAhead() {
            Throttler throttler = throttler(new GcraPolicy("api", 2, Duration.ofSeconds(10)));
            Decision first = throttler.tryAcquire("api", "k");
            advance(2_500);
            assertThat(throttler.tryAcquire("api", "k")).isEqualTo(allow(2, 0, 7_500));
            assertThat(throttler.tryAcquire("api", "k").allowed()).isFalse();
            refund(throttler, "api", 1, first);
            assertThat(throttler.tryAcquire("api", "k"))
                    .as("as if the first call had never been made")
                    .isEqualTo(allow(2, 0, 10_000));
            assertThat(throttler.tryAcquire("api", "k").allowed()).isFalse();
        }

        @Test
        void aTokenBucketRefundAfterTheBucketRefilledGivesBackNothing() {
            Throttler throttler = throttler(TokenBucketPolicy.of("tb", 2, Duration.ofSeconds(10)));
            Decision stale = throttler.tryAcquire("tb", "k");
            advance(10_000);
            assertThat(throttler.tryAcquire("tb", "k", 2)).isEqualTo(allow(2, 0, 20_000));
            refund(throttler, "tb", 1, stale);
            assertThat(throttler.tryAcquire("tb", "k")).isEqualTo(reject(2, 0, 10_000, 20_000));
        }

        @Test
        void aTokenBucketRefundGivesBackWhatItsCallTookStillMissing() {
            Throttler throttler = throttler(TokenBucketPolicy.of("tb", 3, Duration.ofSeconds(10)));
            Decision first = throttler.tryAcquire("tb", "k", 2);
            advance(10_000);
            assertThat(throttler.tryAcquire("tb", "k")).isEqualTo(allow(3, 1, 20_000));
            refund(throttler, "tb", 2, first);
            assertThat(throttler.peek("tb", "k"))
                    .as("one of its two tokens came back by refill, one is given back")
                    .isEqualTo(allow(3, 2, 10_000));
        }

        @Test
        void aLockoutRefundAfterALaterAttemptGivesBackNothing() {
            Throttler throttler = throttler(LockoutPolicy.of("login", LUCIA_LADDER));
            Decision first = throttler.tryAcquire("login", "k");
            advance(1_000);
            assertThat(throttler.tryAcquire("login", "k")).isEqualTo(allow(1, 0, 3_600_000));
            refund(throttler, "login", 1, first);
            assertThat(throttler.tryAcquire("login", "k"))
                    .as("the ladder stays on the second rung")
                    .isEqualTo(reject(1, 0, 2_000, 3_600_000));
        }

        @Test
        void aLockoutRefundOfTheLatestAttemptStepsBackOneRung() {
            Throttler throttler = throttler(LockoutPolicy.of("login", LUCIA_LADDER));
            throttler.tryAcquire("login", "k");
            advance(1_000);
            Decision second = throttler.tryAcquire("login", "k");
            refund(throttler, "login", 1, second);
            advance(500);
            assertThat(throttler.tryAcquire("login", "k"))
                    .as("the first rung's wait is over")
                    .isEqualTo(allow(1, 0, 3_600_000));
            refund(throttler, "login", 1, second);
            assertThat(throttler.tryAcquire("login", "k"))
                    .as("a receipt undoes its own call, not the next")
                    .isEqualTo(reject(1, 0, 2_000, 3_600_000));
        }

        /**
         * One call throttled by two policies, a sibling first and a later one that refuses: what the
         * sibling took is given back by the sibling's own decision, so the sibling is as before the call.
         */
        @Test
        void aRefundRightAfterItsCallLeavesEveryAlgorithmAsBefore() {
            List<Policy> policies = List.of(
                    TokenBucketPolicy.of("tb", 5, Duration.ofHours(1)),
                    new GcraPolicy("gcra", 5, Duration.ofHours(1)),
                    new FixedWindowPolicy("fw", 5, Duration.ofHours(1)),
                    new SlidingLogPolicy("log", 5, Duration.ofHours(1), Duration.ofHours(1), 1.5),
                    new LockoutPolicy("ladder", seconds(1, 2, 4), Duration.ofHours(1)));
            Throttler throttler = throttler(policies.toArray(Policy[]::new));
            for (Policy policy : policies) {
                String name = policy.name();
                int cost = Math.min(2, policy.maxCost());
                assertThat(throttler.tryAcquire(name, "k").allowed()).as(name).isTrue();
                advance(1_000);
                Decision before = throttler.peek(name, "k");
                Decision taken = throttler.tryAcquire(name, "k", cost);
                assertThat(taken.allowed()).as(name).isTrue();
                assertThat(taken.receipt()).as(name + " stamps what it took").isPositive();
                refund(throttler, name, cost, taken);
                assertThat(throttler.peek(name, "k")).as(name).isEqualTo(before);
            }
        }
    }

    /**
     * What {@code RateLimit}'s {@code t} is made of: {@link Decision#nextUnitAfterMillis()}, the time
     * until one unit more than {@code r} is available, for every algorithm; a refusal's is its own
     * wait, so that {@code Retry-After} is never earlier.
     */
    @Nested
    class NextUnit {

        /** Every algorithm, and the forms whose next unit is not simply the state's reset. */
        private final List<Policy> policies = List.of(
                TokenBucketPolicy.of("tb", 5, Duration.ofSeconds(2)),
                new TokenBucketPolicy("tb3", 7, 3, Duration.ofSeconds(5)),
                new GcraPolicy("gcra", 5, Duration.ofSeconds(10)),
                new GcraPolicy("third", 3, Duration.ofSeconds(1)),
                new FixedWindowPolicy("fw", 4, Duration.ofSeconds(15)),
                SlidingLogPolicy.withDefaults("metabase"),
                new SlidingLogPolicy("aging", 2, Duration.ofSeconds(10), Duration.ofSeconds(8), 2),
                LockoutPolicy.of("lock", LUCIA_LADDER));

        /**
         * A client that, whenever {@code r} is 0, waits exactly {@code t} before its next call (and at
         * other times calls again at once or after a pause of its own) is never refused; and {@code t}
         * is not a moment longer than needed: a millisecond earlier the call would be refused.
         */
        @Test
        void aClientThatWaitsTWheneverRIsZeroIsNeverRefusedAndNeedNotWaitLonger() {
            obeyingClients(false);
        }

        /** The same client reading the header: {@code t} in whole seconds, rounded up. */
        @Test
        void aClientThatWaitsTheHeadersWholeSecondsIsNeverRefused() {
            obeyingClients(true);
        }

        private void obeyingClients(boolean wholeSeconds) {
            Throttler throttler = throttler(this.policies.toArray(Policy[]::new));
            java.util.Random pauses = new java.util.Random(11);
            for (Policy policy : this.policies) {
                String name = policy.name();
                for (int call = 0; call < 60; call++) {
                    Decision decision = throttler.tryAcquire(name, "client");
                    assertThat(decision.allowed()).as("%s call %d", name, call).isTrue();
                    assertThat(decision.remaining()).as(name).isLessThan(policy.quota());
                    long t = decision.nextUnitAfterMillis();
                    assertThat(t)
                            .as("%s call %d: t while r is below the quota", name, call)
                            .isPositive();
                    if (decision.remaining() == 0) {
                        advance(t - 1);
                        assertThat(throttler.peek(name, "client").allowed())
                                .as("%s call %d: a moment before t", name, call)
                                .isFalse();
                        advance(1);
                        if (wholeSeconds) {
                            advance(decision.nextUnitAfterSeconds() * 1000 - t);
                        }
                    } else if (pauses.nextInt(3) == 0) {
                        advance(pauses.nextInt(1_500));
                    }
                }
            }
        }

        @Test
        void aRefusalsTIsItsOwnWaitSoRetryAfterIsNeverEarlier() {
            Throttler throttler = throttler(this.policies.toArray(Policy[]::new));
            for (Policy policy : this.policies) {
                Decision refused = throttler.tryAcquire(policy.name(), "k", policy.maxCost());
                for (int i = 0; i < 20 && refused.allowed(); i++) {
                    refused = throttler.tryAcquire(policy.name(), "k", policy.maxCost());
                }
                assertThat(refused.allowed()).as(policy.name()).isFalse();
                assertThat(refused.nextUnitAfterMillis()).as(policy.name()).isEqualTo(refused.retryAfterMillis());
                assertThat(refused.retryAfterSeconds())
                        .as(policy.name())
                        .isGreaterThanOrEqualTo(refused.nextUnitAfterSeconds());
            }
        }

        @Test
        void aLockoutRefusedForASecondSaysOneSecondNotAnHour() {
            Throttler throttler = throttler(LockoutPolicy.of("login", LUCIA_LADDER));
            assertThat(throttler.tryAcquire("login", "alice").nextUnitAfterMillis())
                    .isEqualTo(1_000);
            Decision refused = throttler.tryAcquire("login", "alice");
            assertThat(refused.nextUnitAfterSeconds()).isEqualTo(1);
            assertThat(refused.resetAfterSeconds()).isEqualTo(3_600);
            advance(1_000);
            assertThat(throttler.tryAcquire("login", "alice").nextUnitAfterMillis())
                    .as("the second rung")
                    .isEqualTo(2_000);
            assertThat(throttler.peek("login", "nobody").nextUnitAfterMillis())
                    .as("nothing in use")
                    .isZero();
        }

        @Test
        void eachAlgorithmsNextUnit() {
            Throttler throttler = throttler(this.policies.toArray(Policy[]::new));
            assertThat(throttler.tryAcquire("tb", "k", 3).nextUnitAfterMillis())
                    .as("the next refill")
                    .isEqualTo(2_000);
            advance(500);
            assertThat(throttler.peek("tb", "k").nextUnitAfterMillis()).isEqualTo(1_500);
            assertThat(throttler.tryAcquire("tb3", "k", 7).nextUnitAfterMillis())
                    .as("3 tokens per 5 s")
                    .isEqualTo(5_000);
            assertThat(throttler.tryAcquire("gcra", "k").nextUnitAfterMillis()).isEqualTo(2_000);
            assertThat(throttler.tryAcquire("gcra", "k").nextUnitAfterMillis())
                    .as("one interval, not the score")
                    .isEqualTo(2_000);
            assertThat(throttler.tryAcquire("third", "k").nextUnitAfterMillis())
                    .as("333.333 ms, rounded up")
                    .isEqualTo(334);
            assertThat(throttler.tryAcquire("fw", "k").nextUnitAfterMillis())
                    .as("the window's end")
                    .isEqualTo(15_000);
            assertThat(throttler.tryAcquire("metabase", "k").nextUnitAfterMillis())
                    .as("the attempt ages out")
                    .isEqualTo(3_600_000);
            assertThat(throttler.tryAcquire("aging", "k").nextUnitAfterMillis()).isEqualTo(10_000);
            advance(5_000);
            assertThat(throttler.tryAcquire("aging", "k").nextUnitAfterMillis())
                    .as("the first attempt ages out 5 s on, before the 8 s delay after this one ends")
                    .isEqualTo(5_000);
            advance(1_000);
            assertThat(throttler.tryAcquire("aging", "k"))
                    .as("and a refusal waits for it too")
                    .isEqualTo(reject(2, 0, 4_000, 9_000));
        }
    }

    /**
     * A JVM started with a wrong clock that is corrected later: the store's own age must not matter.
     */
    @Nested
    class ClockCorrectedYearsLater {

        @Test
        void aStoreCreatedUnderAClockTwentySixYearsBehindKeepsEveryLimitOnceTheClockIsCorrected() {
            ManualTimeSource wrong = new ManualTimeSource(Instant.parse("2000-01-01T00:00:00Z"));
            ThrottleStore early = createStore(wrong);
            try {
                List<Policy> policies = List.of(
                        TokenBucketPolicy.of("tb", 3, Duration.ofSeconds(10)),
                        new GcraPolicy("gcra", 3, Duration.ofSeconds(30)),
                        new FixedWindowPolicy("fw", 3, Duration.ofSeconds(10)),
                        new SlidingLogPolicy("log", 3, Duration.ofMinutes(1), Duration.ofSeconds(10), 1),
                        LockoutPolicy.of("lock", seconds(1, 2)));
                Throttler throttler = new Throttler(early, policies);
                for (Policy policy : policies) {
                    throttler.tryAcquire(policy.name(), "k");
                }
                wrong.advance(
                        Duration.between(Instant.parse("2000-01-01T00:00:00Z"), Instant.parse("2026-01-01T00:00:00Z")));
                for (Policy policy : policies) {
                    for (int i = 0; i < policy.quota(); i++) {
                        assertThat(throttler.tryAcquire(policy.name(), "k").allowed())
                                .as(policy.name() + " call " + i)
                                .isTrue();
                    }
                    assertThat(throttler.tryAcquire(policy.name(), "k").allowed())
                            .as(policy.name() + " over quota")
                            .isFalse();
                }
                assertThat(throttler.tryAcquire("fw", "k")).isEqualTo(reject(3, 0, 10_000, 10_000));
                assertThat(throttler.tryAcquire("lock", "k")).isEqualTo(reject(1, 0, 1_000, 3_600_000));
                wrong.advanceMillis(10_000);
                assertThat(throttler.tryAcquire("fw", "k")).isEqualTo(allow(3, 2, 10_000));
            } finally {
                early.close();
            }
        }
    }

    @Nested
    class Keys {

        private final FixedWindowPolicy policy = new FixedWindowPolicy("fw", 2, Duration.ofMinutes(1));

        @Test
        void nullAndBlankKeysShareOneBucketInsteadOfBypassingTheLimit() {
            Throttler throttler = throttler(this.policy);
            assertThat(throttler.tryAcquire("fw", null).allowed()).isTrue();
            assertThat(throttler.tryAcquire("fw", "   ").allowed()).isTrue();
            assertThat(throttler.tryAcquire("fw", "").allowed()).isFalse();
            assertThat(throttler.tryAcquire("fw", "\t").allowed()).isFalse();
        }

        @Test
        void longKeysAreStoredHashedAndStayDistinct() {
            Throttler throttler = throttler(this.policy);
            String prefix = "x".repeat(300);
            throttler.tryAcquire("fw", prefix + "a");
            throttler.tryAcquire("fw", prefix + "a");
            assertThat(throttler.tryAcquire("fw", prefix + "a").allowed()).isFalse();
            assertThat(throttler.tryAcquire("fw", prefix + "b").allowed()).isTrue();
            assertThat(throttler.tryAcquire("fw", "k".repeat(100_000)).allowed())
                    .isTrue();
        }

        @Test
        void keysWithUnicodeBracesAndColonsAreOrdinaryKeys() {
            Throttler throttler = throttler(this.policy);
            for (String key : List.of("ülrike@example.com", "{evil}", "a:b:c", "日本", "key with spaces")) {
                assertThat(throttler.tryAcquire("fw", key).allowed()).as(key).isTrue();
                assertThat(throttler.tryAcquire("fw", key).allowed()).as(key).isTrue();
                assertThat(throttler.tryAcquire("fw", key).allowed()).as(key).isFalse();
            }
        }
    }

    @Nested
    class Concurrency {

        private static final int THREADS = 8;

        private static final int CALLS_PER_THREAD = 10_000;

        private long passesOnOneKey(Policy policy) throws Exception {
            Throttler throttler = throttler(policy);
            return run((thread) -> {
                long passed = 0;
                for (int i = 0; i < CALLS_PER_THREAD; i++) {
                    passed += throttler.tryAcquire(policy.name(), "hot").allowed() ? 1 : 0;
                }
                return passed;
            });
        }

        private long run(ThreadBody body) throws Exception {
            ExecutorService pool = Executors.newFixedThreadPool(THREADS);
            try {
                CountDownLatch start = new CountDownLatch(1);
                List<Future<Long>> results = new ArrayList<>();
                for (int t = 0; t < THREADS; t++) {
                    int thread = t;
                    Callable<Long> task = () -> {
                        start.await();
                        return body.run(thread);
                    };
                    results.add(pool.submit(task));
                }
                start.countDown();
                long total = 0;
                for (Future<Long> result : results) {
                    total += result.get(5, TimeUnit.MINUTES);
                }
                return total;
            } finally {
                pool.shutdownNow();
            }
        }

        @Test
        void eightThreadsOnOneTokenBucketKeyGetExactlyItsCapacity() throws Exception {
            assertThat(passesOnOneKey(TokenBucketPolicy.of("tb", 1_000, Duration.ofHours(1))))
                    .isEqualTo(1_000);
        }

        @Test
        void eightThreadsOnOneGcraKeyGetExactlyItsLimit() throws Exception {
            assertThat(passesOnOneKey(new GcraPolicy("gcra", 1_000, Duration.ofHours(1))))
                    .isEqualTo(1_000);
        }

        @Test
        void eightThreadsOnOneFixedWindowKeyGetExactlyItsLimit() throws Exception {
            assertThat(passesOnOneKey(new FixedWindowPolicy("fw", 1_000, Duration.ofHours(1))))
                    .isEqualTo(1_000);
        }

        @Test
        void eightThreadsOnOneSlidingLogKeyGetExactlyItsThreshold() throws Exception {
            assertThat(passesOnOneKey(SlidingLogPolicy.withDefaults("log"))).isEqualTo(10);
        }

        @Test
        void eightThreadsOnOneLockoutKeyGetExactlyOnePass() throws Exception {
            assertThat(passesOnOneKey(LockoutPolicy.of("lock", LUCIA_LADDER))).isEqualTo(1);
        }

        @Test
        void eightThreadsOverTenThousandKeysGetExactlyTheCapacityOfEachKey() throws Exception {
            TokenBucketPolicy policy = TokenBucketPolicy.of("tb", 5, Duration.ofHours(1));
            Throttler throttler = throttler(policy);
            long passed = run((thread) -> {
                long count = 0;
                for (int i = 0; i < CALLS_PER_THREAD; i++) {
                    int key = (i * 7919 + thread * 1_250) % 10_000;
                    count += throttler.tryAcquire("tb", "key-" + key).allowed() ? 1 : 0;
                }
                return count;
            });
            assertThat(passed).as("8 calls per key, 5 of them granted").isEqualTo(50_000);
        }
    }

    /**
     * Plans: one policy's keys under several sets of numbers, and numbers changed at run
     * time. A key keeps what it used whichever numbers it meets next, on every store.
     */
    @Nested
    class Plans {

        private Throttler planned(Policy base, Policy free, Policy pro) {
            return new Throttler(
                    ThrottleStoreContract.this.store,
                    List.of(base),
                    java.util.Map.of(base.name(), java.util.Map.of("free", free, "pro", pro)),
                    List.of());
        }

        private void take(Throttler throttler, String plan, int calls) {
            for (int i = 0; i < calls; i++) {
                assertThat(throttler.tryAcquire("api", plan, "k", 1).allowed())
                        .as("%s call %d", plan, i + 1)
                        .isTrue();
            }
        }

        @Test
        void tokenBucketFreeToProAfterTenCallsLeavesNineHundredNinety() {
            Throttler throttler = planned(
                    TokenBucketPolicy.of("api", 100, Duration.ofSeconds(6)),
                    TokenBucketPolicy.of("api", 10, Duration.ofSeconds(6)),
                    new TokenBucketPolicy("api", 1000, 100, Duration.ofSeconds(6)));
            take(throttler, "free", 10);
            assertThat(throttler.tryAcquire("api", "free", "k", 1).allowed()).isFalse();
            assertThat(throttler.peek("api", "k").remaining())
                    .as("base: 100 - 10")
                    .isEqualTo(90);
            assertThat(throttler.tryAcquire("api", "pro", "k", 1)).isEqualTo(Decision.allow(1000, 989, 6_000));
        }

        @Test
        void tokenBucketProToFreeAfterNineHundredNinetyWaitsUntilTheUsedTokensFitTheFreeCapacity() {
            Throttler throttler = planned(
                    TokenBucketPolicy.of("api", 100, Duration.ofSeconds(6)),
                    TokenBucketPolicy.of("api", 10, Duration.ofSeconds(6)),
                    new TokenBucketPolicy("api", 1000, 100, Duration.ofSeconds(6)));
            assertThat(throttler.tryAcquire("api", "pro", "k", 990).allowed()).isTrue();
            assertThat(throttler.tryAcquire("api", "free", "k", 1))
                    .isEqualTo(Decision.reject(10, 0, 981 * 6_000L, 990 * 6_000L));
            advance(6_000);
            assertThat(throttler.tryAcquire("api", "pro", "k", 1).remaining())
                    .as("one refill of 100 under pro")
                    .isEqualTo(1000 - 890 - 1);
        }

        @Test
        void gcraFreeToProAfterTenCallsLeavesNineHundredNinety() {
            Throttler throttler = planned(
                    new GcraPolicy("api", 100, Duration.ofMinutes(1)),
                    new GcraPolicy("api", 10, Duration.ofMinutes(1)),
                    new GcraPolicy("api", 1000, Duration.ofMinutes(1)));
            take(throttler, "free", 10);
            assertThat(throttler.tryAcquire("api", "free", "k", 1).allowed()).isFalse();
            assertThat(throttler.tryAcquire("api", "pro", "k", 1)).isEqualTo(Decision.allow(1000, 989, 660));
        }

        @Test
        void gcraSwitchingPlanMidPeriodKeepsWhatTheOldRateHasNotYetForgiven() {
            Throttler throttler = planned(
                    new GcraPolicy("api", 100, Duration.ofMinutes(1)),
                    new GcraPolicy("api", 10, Duration.ofMinutes(1)),
                    new GcraPolicy("api", 1000, Duration.ofMinutes(1)));
            take(throttler, "free", 10);
            advance(30_000);
            assertThat(throttler.tryAcquire("api", "pro", "k", 1).remaining())
                    .as("5 of the 10 still used")
                    .isEqualTo(994);
            assertThat(throttler.tryAcquire("api", "free", "k", 1))
                    .as("6 used under free: the seventh passes")
                    .isEqualTo(Decision.allow(10, 3, 42_000));
        }

        @Test
        void gcraProToFreeAfterNineHundredNinetyWaitsAsFreeForEveryCallUsed() {
            Throttler throttler = planned(
                    new GcraPolicy("api", 100, Duration.ofMinutes(1)),
                    new GcraPolicy("api", 10, Duration.ofMinutes(1)),
                    new GcraPolicy("api", 1000, Duration.ofMinutes(1)));
            assertThat(throttler.tryAcquire("api", "pro", "k", 990).allowed()).isTrue();
            assertThat(throttler.tryAcquire("api", "free", "k", 1))
                    .isEqualTo(Decision.reject(10, 0, 5_886_000, 5_940_000));
            assertThat(throttler.tryAcquire("api", "pro", "k", 1).remaining())
                    .as("pro still sees 990 used")
                    .isEqualTo(9);
        }

        @Test
        void fixedWindowSwitchingPlanMidWindowKeepsTheCountAndTheWindow() {
            Throttler throttler = planned(
                    new FixedWindowPolicy("api", 100, Duration.ofMinutes(1)),
                    new FixedWindowPolicy("api", 10, Duration.ofMinutes(1)),
                    new FixedWindowPolicy("api", 1000, Duration.ofMinutes(1)));
            take(throttler, "free", 10);
            advance(20_000);
            assertThat(throttler.tryAcquire("api", "free", "k", 1).allowed()).isFalse();
            assertThat(throttler.tryAcquire("api", "pro", "k", 1)).isEqualTo(Decision.allow(1000, 989, 40_000));
            advance(40_000);
            assertThat(throttler.tryAcquire("api", "free", "k", 1))
                    .as("a new window")
                    .isEqualTo(Decision.allow(10, 9, 60_000));
        }

        @Test
        void slidingLogKeepsItsAttemptsAcrossPlans() {
            Throttler throttler = planned(
                    new SlidingLogPolicy("api", 3, Duration.ofSeconds(10), Duration.ofSeconds(1), 1),
                    new SlidingLogPolicy("api", 2, Duration.ofSeconds(10), Duration.ofSeconds(1), 1),
                    new SlidingLogPolicy("api", 5, Duration.ofSeconds(10), Duration.ofSeconds(1), 1));
            take(throttler, "free", 2);
            assertThat(throttler.tryAcquire("api", "free", "k", 1).allowed()).isFalse();
            take(throttler, "pro", 3);
            assertThat(throttler.tryAcquire("api", "pro", "k", 1).allowed())
                    .as("5 recorded, threshold 5: over")
                    .isFalse();
        }

        @Test
        void lockoutKeepsItsRungAcrossPlans() {
            Throttler throttler = planned(
                    LockoutPolicy.of("api", seconds(1, 2)),
                    LockoutPolicy.of("api", seconds(5, 10)),
                    LockoutPolicy.of("api", seconds(1, 2)));
            take(throttler, "free", 1);
            advance(1_000);
            assertThat(throttler.tryAcquire("api", "free", "k", 1).allowed()).isFalse();
            take(throttler, "pro", 1);
            assertThat(throttler.tryAcquire("api", "free", "k", 1))
                    .as("rung 1 of the free ladder, 10 s")
                    .isEqualTo(Decision.reject(1, 0, 10_000, 3_600_000));
        }

        @Test
        void anUnknownOrBlankPlanGetsTheBaseNumbers() {
            Throttler throttler = planned(
                    new FixedWindowPolicy("api", 3, Duration.ofMinutes(1)),
                    new FixedWindowPolicy("api", 1, Duration.ofMinutes(1)),
                    new FixedWindowPolicy("api", 9, Duration.ofMinutes(1)));
            assertThat(throttler.tryAcquire("api", "gold", "k", 1)).isEqualTo(Decision.allow(3, 2, 60_000));
            assertThat(throttler.tryAcquire("api", " ", "k", 1)).isEqualTo(Decision.allow(3, 1, 60_000));
            assertThat(throttler.tryAcquire("api", null, "k", 1)).isEqualTo(Decision.allow(3, 0, 60_000));
        }

        @Test
        void aPolicyChangedUnderConcurrentTrafficIsNeverSeenHalfAppliedAndNoKeyLosesItsState() throws Exception {
            // capacity and refill period change together: a decision under a mix would pair them wrongly
            TokenBucketPolicy small = new TokenBucketPolicy("cc", 1000, 1, Duration.ofHours(1));
            TokenBucketPolicy large = new TokenBucketPolicy("cc", 2000, 2, Duration.ofHours(2));
            Throttler throttler = throttler(small);
            int threads = 4;
            int calls = 200;
            int keys = 20;
            java.util.concurrent.atomic.AtomicIntegerArray allowed =
                    new java.util.concurrent.atomic.AtomicIntegerArray(keys);
            java.util.Queue<String> torn = new java.util.concurrent.ConcurrentLinkedQueue<>();
            java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
            ExecutorService pool = Executors.newFixedThreadPool(threads + 1);
            try {
                Future<Integer> changer = pool.submit(() -> {
                    int changes = 0;
                    while (!done.get() || changes < 2) {
                        throttler.update((changes % 2 == 0) ? large : small, java.util.Map.of());
                        changes++;
                    }
                    return changes;
                });
                List<Future<?>> callers = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    int thread = t;
                    callers.add(pool.submit(() -> {
                        for (int i = 0; i < calls; i++) {
                            int key = (i + thread * 7) % keys;
                            Decision decision = throttler.tryAcquire("cc", "k" + key);
                            long period = (decision.limit() == 1000) ? 3_600_000 : 7_200_000;
                            if (decision.limit() != 1000 && decision.limit() != 2000
                                    || decision.nextUnitAfterMillis() != period) {
                                torn.add(decision.toString());
                            }
                            if (decision.allowed()) {
                                allowed.incrementAndGet(key);
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> caller : callers) {
                    caller.get(5, TimeUnit.MINUTES);
                }
                done.set(true);
                assertThat(changer.get(5, TimeUnit.MINUTES))
                        .as("changes made under traffic")
                        .isGreaterThan(1);
            } finally {
                pool.shutdownNow();
            }
            assertThat(torn).as("decisions under a mix of old and new numbers").isEmpty();
            int capacity = throttler.policy("cc").quota();
            for (int key = 0; key < keys; key++) {
                assertThat(allowed.get(key)).isEqualTo(threads * calls / keys);
                assertThat(throttler.peek("cc", "k" + key).remaining())
                        .as("k%d kept what it used", key)
                        .isEqualTo(capacity - allowed.get(key));
            }
        }

        @Test
        void numbersChangedAtRunTimeKeepEachKeysState() {
            Throttler throttler = throttler(
                    TokenBucketPolicy.of("api", 10, Duration.ofSeconds(6)),
                    new GcraPolicy("g", 10, Duration.ofMinutes(1)),
                    new FixedWindowPolicy("f", 10, Duration.ofMinutes(1)));
            for (String policy : List.of("api", "g", "f")) {
                throttler.tryAcquire(policy, "k", 10);
            }
            throttler.update(TokenBucketPolicy.of("api", 20, Duration.ofSeconds(6)), java.util.Map.of());
            throttler.update(new GcraPolicy("g", 20, Duration.ofMinutes(1)), java.util.Map.of());
            throttler.update(new FixedWindowPolicy("f", 20, Duration.ofMinutes(1)), java.util.Map.of());
            for (String policy : List.of("api", "g", "f")) {
                assertThat(throttler.tryAcquire(policy, "k", 1).remaining())
                        .as(policy)
                        .isEqualTo(9);
                assertThat(throttler.policy(policy).quota()).isEqualTo(20);
            }
        }
    }

    /** A policy with several limits: a burst limit and a sustained one, all must allow, charged at once. */
    @Nested
    class SeveralLimits {

        /** 2 a second (burst) and 3 an hour (sustained). */
        private final Policy search = MultiLimitPolicy.of(
                TokenBucketPolicy.of("search", 2, Duration.ofSeconds(1)),
                TokenBucketPolicy.of("search", 3, Duration.ofHours(1)));

        private void assertRemaining(Throttler throttler, int burst, int sustained) {
            Decision peek = throttler.peek("search", "k");
            assertThat(peek.limitCount()).isEqualTo(2);
            assertThat(peek.limit(0).remaining()).as("burst limit").isEqualTo(burst);
            assertThat(peek.limit(1).remaining()).as("sustained limit").isEqualTo(sustained);
        }

        @Test
        void theBurstLimitRefusesAndTheRefusalChargesNeitherLimit() {
            Throttler throttler = throttler(this.search);
            assertThat(throttler.tryAcquire("search", "k", 1)).isEqualTo(allow(2, 1, 3_600_000));
            assertThat(throttler.tryAcquire("search", "k", 1)).isEqualTo(allow(2, 0, 7_200_000));
            Decision refused = throttler.tryAcquire("search", "k", 1);
            assertThat(refused).isEqualTo(reject(2, 0, 1_000, 7_200_000));
            assertThat(refused.limit(0).allowed()).isFalse();
            assertThat(refused.limit(1).allowed())
                    .as("the sustained limit would allow it")
                    .isTrue();
            assertThat(refused.limit(1).remaining()).isEqualTo(1);
            assertRemaining(throttler, 0, 1);
            advance(1_000);
            assertThat(throttler.tryAcquire("search", "k", 1))
                    .as("the sustained limit's last unit was not taken")
                    .isEqualTo(allow(2, 0, 10_799_000));
        }

        @Test
        void theSustainedLimitRefusesAndLeavesTheBurstLimitUntouched() {
            Throttler throttler = throttler(this.search);
            for (int i = 0; i < 3; i++) {
                assertThat(throttler.tryAcquire("search", "k", 1).allowed()).isTrue();
                advance(1_000);
            }
            assertRemaining(throttler, 2, 0);
            Decision refused = throttler.tryAcquire("search", "k", 1);
            assertThat(refused).isEqualTo(reject(3, 0, 3_597_000, 10_797_000));
            assertThat(refused.limit(0).allowed()).isTrue();
            assertRemaining(throttler, 2, 0);
        }

        @Test
        void whenSeveralLimitsRefuseTheCallWaitsForTheLongest() {
            Throttler throttler = throttler(this.search);
            throttler.tryAcquire("search", "k", 2);
            advance(1_000);
            throttler.tryAcquire("search", "k", 1);
            Decision refused = throttler.tryAcquire("search", "k", 1);
            assertThat(refused.limit(0).retryAfterMillis()).isEqualTo(1_000);
            assertThat(refused.limit(1).retryAfterMillis()).isEqualTo(3_599_000);
            assertThat(refused.retryAfterMillis()).isEqualTo(3_599_000);
            assertThat(refused.retryAfterSeconds()).isEqualTo(3_599);
        }

        @Test
        void aCostAboveTheSmallestLimitIsNeverGranted() {
            Throttler throttler = throttler(this.search);
            assertThat(throttler.policy("search").maxCost()).isEqualTo(2);
            assertThat(throttler.tryAcquire("search", "k", 3).retryAfterMillis())
                    .isEqualTo(Decision.NEVER);
            assertRemaining(throttler, 2, 3);
        }

        @Test
        void aRefundGivesBackExactlyWhatItsCallTookFromEachLimit() {
            Throttler throttler = throttler(this.search);
            Decision first = throttler.tryAcquire("search", "k", 1);
            advance(1_000);
            throttler.tryAcquire("search", "k", 1);
            throttler.bound("search").refund("k", 1, first);
            assertThat(throttler.peek("search", "k").limit(0).remaining())
                    .as("the first call's burst token came back with the refill: the second call's is not given")
                    .isEqualTo(1);
            assertThat(throttler.peek("search", "k").limit(1).remaining())
                    .as("the sustained token is given back")
                    .isEqualTo(2);
            Decision third = throttler.tryAcquire("search", "k", 1);
            throttler.bound("search").refund("k", 1, third);
            assertRemaining(throttler, 1, 2);
        }

        @Test
        void switchingPlanKeepsWhatEachLimitUsed() {
            Policy free = this.search;
            Policy pro = MultiLimitPolicy.of(
                    TokenBucketPolicy.of("search", 20, Duration.ofSeconds(1)),
                    TokenBucketPolicy.of("search", 100, Duration.ofHours(1)));
            Throttler throttler = new Throttler(
                    ThrottleStoreContract.this.store,
                    List.of(free),
                    java.util.Map.of("search", java.util.Map.of("free", free, "pro", pro)),
                    List.of());
            throttler.tryAcquire("search", "free", "k", 2);
            assertThat(throttler.tryAcquire("search", "free", "k", 1).allowed()).isFalse();
            Decision pro1 = throttler.tryAcquire("search", "pro", "k", 1);
            assertThat(pro1.limit(0).remaining()).isEqualTo(17);
            assertThat(pro1.limit(1).remaining()).isEqualTo(97);
            assertThat(throttler.tryAcquire("search", "free", "k", 1).allowed())
                    .as("3 of free's 3 used")
                    .isFalse();
        }

        @Test
        void numbersChangedAtRunTimeKeepWhatEachLimitUsed() {
            Throttler throttler = throttler(this.search);
            throttler.tryAcquire("search", "k", 2);
            throttler.update(
                    MultiLimitPolicy.of(
                            TokenBucketPolicy.of("search", 4, Duration.ofSeconds(1)),
                            TokenBucketPolicy.of("search", 10, Duration.ofHours(1))),
                    java.util.Map.of());
            assertRemaining(throttler, 2, 8);
        }

        @Test
        void gcraLimitsAllMustAllow() {
            Throttler throttler = throttler(MultiLimitPolicy.of(
                    new GcraPolicy("search", 2, Duration.ofSeconds(1)),
                    new GcraPolicy("search", 3, Duration.ofHours(1))));
            int allowed = 0;
            while (throttler.tryAcquire("search", "k", 1).allowed()) {
                allowed++;
            }
            assertThat(allowed).as("the burst of 2 a second").isEqualTo(2);
            Decision before = throttler.peek("search", "k");
            throttler.tryAcquire("search", "k", 1);
            assertThat(throttler.peek("search", "k"))
                    .as("a refusal changes nothing")
                    .isEqualTo(before);
            advance(1_000);
            assertThat(throttler.tryAcquire("search", "k", 1).allowed()).isTrue();
            advance(1_000);
            Decision refused = throttler.tryAcquire("search", "k", 1);
            assertThat(refused.allowed()).as("3 an hour").isFalse();
            assertThat(refused.limit(0).allowed()).isTrue();
            assertThat(refused.retryAfterMillis())
                    .isEqualTo(refused.limit(1).retryAfterMillis())
                    .isGreaterThan(1_000_000);
        }

        @Test
        void fixedWindowLimitsAllMustAllow() {
            Throttler throttler = throttler(MultiLimitPolicy.of(
                    new FixedWindowPolicy("search", 2, Duration.ofSeconds(1)),
                    new FixedWindowPolicy("search", 3, Duration.ofMinutes(1))));
            assertThat(throttler.tryAcquire("search", "k", 2).allowed()).isTrue();
            Decision burst = throttler.tryAcquire("search", "k", 1);
            assertThat(burst.allowed()).isFalse();
            assertThat(burst.retryAfterMillis()).isEqualTo(1_000);
            advance(1_000);
            assertThat(throttler.tryAcquire("search", "k", 1).allowed()).isTrue();
            advance(1_000);
            Decision sustained = throttler.tryAcquire("search", "k", 1);
            assertThat(sustained.allowed()).isFalse();
            assertThat(sustained.retryAfterMillis()).isEqualTo(58_000);
            assertThat(throttler.peek("search", "k").limit(0).remaining())
                    .as("the burst window is untouched")
                    .isEqualTo(2);
        }
    }

    /**
     * Concurrency slots: a call takes a slot and gives it back by its receipt, that slot and no other,
     * once; a slot not given back frees itself when its lease runs out, by the store's clock.
     */
    @Nested
    class ConcurrencySlots {

        private final ConcurrencyPolicy reports = new ConcurrencyPolicy("reports", 2, Duration.ofSeconds(30));

        /** A store that does not run concurrency refuses to bind it, naming the algorithm, before any call. */
        private void aStoreThatDoesNotRunConcurrencyRefusesToBindIt() {
            assertThatIllegalArgumentException()
                    .isThrownBy(() -> throttler(this.reports).bound("reports").tryAcquire("k", 1))
                    .withMessageContaining("concurrency");
        }

        private void release(Throttler throttler, Decision slot) {
            throttler.bound("reports").refund("k", 1, slot);
        }

        private int inUse(Throttler throttler) {
            Decision peek = throttler.peek("reports", "k");
            return peek.limit() - peek.remaining();
        }

        @Test
        void slotsAreTakenUpToTheLimitAndARefusalHintsOneSecond() {
            if (!runsConcurrency()) {
                aStoreThatDoesNotRunConcurrencyRefusesToBindIt();
                return;
            }
            Throttler throttler = throttler(this.reports);
            Decision first = throttler.tryAcquire("reports", "k");
            assertThat(first).isEqualTo(allow(2, 1, 30_000));
            assertThat(first.receipt()).as("the slot's id").isPositive();
            Decision second = throttler.tryAcquire("reports", "k");
            assertThat(second).isEqualTo(allow(2, 0, 30_000));
            assertThat(second.receipt()).isNotEqualTo(first.receipt());
            Decision refused = throttler.tryAcquire("reports", "k");
            assertThat(refused).isEqualTo(reject(2, 0, 1_000, 30_000));
            assertThat(refused.nextUnitAfterMillis()).isEqualTo(refused.retryAfterMillis());
            assertThat(throttler.peek("reports", "k")).isEqualTo(refused);
        }

        @Test
        void aReleaseFreesItsOwnSlotAndASecondReleaseFreesNothing() {
            if (!runsConcurrency()) {
                aStoreThatDoesNotRunConcurrencyRefusesToBindIt();
                return;
            }
            Throttler throttler = throttler(this.reports);
            Decision first = throttler.tryAcquire("reports", "k");
            throttler.tryAcquire("reports", "k");
            release(throttler, first);
            assertThat(inUse(throttler)).isEqualTo(1);
            release(throttler, first);
            assertThat(inUse(throttler)).as("released twice, freed once").isEqualTo(1);
            Decision third = throttler.tryAcquire("reports", "k");
            assertThat(third.allowed()).isTrue();
            release(throttler, first);
            assertThat(inUse(throttler))
                    .as("a late release of a freed slot frees none of the slots taken since")
                    .isEqualTo(2);
            assertThat(throttler.tryAcquire("reports", "k").allowed()).isFalse();
        }

        @Test
        void aSlotTakenAndReleasedInOneMillisecondNeverSharesItsIdWithTheNext() {
            if (!runsConcurrency()) {
                aStoreThatDoesNotRunConcurrencyRefusesToBindIt();
                return;
            }
            Throttler throttler = throttler(this.reports);
            Decision first = throttler.tryAcquire("reports", "k");
            release(throttler, first);
            Decision second = throttler.tryAcquire("reports", "k");
            assertThat(second.receipt()).isNotEqualTo(first.receipt());
            release(throttler, first);
            assertThat(inUse(throttler)).as("the first slot's release is spent").isEqualTo(1);
        }

        @Test
        void aSlotFreesItselfWhenItsLeaseRunsOut() {
            if (!runsConcurrency()) {
                aStoreThatDoesNotRunConcurrencyRefusesToBindIt();
                return;
            }
            Throttler throttler = throttler(this.reports);
            throttler.tryAcquire("reports", "k");
            advance(10_000);
            throttler.tryAcquire("reports", "k");
            advance(19_999);
            assertThat(throttler.tryAcquire("reports", "k"))
                    .as("the oldest lease runs out in 1 ms: the hint says so")
                    .isEqualTo(reject(2, 0, 1, 10_001));
            advance(1);
            assertThat(throttler.peek("reports", "k").remaining()).isEqualTo(1);
            assertThat(throttler.tryAcquire("reports", "k")).isEqualTo(allow(2, 0, 30_000));
            advance(30_000);
            assertThat(throttler.peek("reports", "k")).isEqualTo(throttler.peek("reports", "never-used"));
        }

        @Test
        void aReleaseOfASlotWhoseLeaseRanOutDoesNotFreeANewerOne() {
            if (!runsConcurrency()) {
                aStoreThatDoesNotRunConcurrencyRefusesToBindIt();
                return;
            }
            Throttler throttler = throttler(this.reports);
            Decision expired = throttler.tryAcquire("reports", "k");
            throttler.tryAcquire("reports", "k");
            advance(30_000);
            assertThat(throttler.tryAcquire("reports", "k").allowed()).isTrue();
            assertThat(throttler.tryAcquire("reports", "k").allowed()).isTrue();
            release(throttler, expired);
            assertThat(throttler.tryAcquire("reports", "k").allowed())
                    .as("the late release freed nothing")
                    .isFalse();
        }

        @Test
        void aShortLeaseIsTheHintWhenItRunsOutBeforeOneSecond() {
            if (!runsConcurrency()) {
                aStoreThatDoesNotRunConcurrencyRefusesToBindIt();
                return;
            }
            Throttler throttler = throttler(new ConcurrencyPolicy("short", 1, Duration.ofMillis(400)));
            throttler.tryAcquire("short", "k");
            advance(100);
            assertThat(throttler.tryAcquire("short", "k")).isEqualTo(reject(1, 0, 300, 300));
        }

        @Test
        void plansChangeTheLimitAndKeepTheSlotsInUse() {
            if (!runsConcurrency()) {
                aStoreThatDoesNotRunConcurrencyRefusesToBindIt();
                return;
            }
            ConcurrencyPolicy two = this.reports;
            ConcurrencyPolicy five = new ConcurrencyPolicy("reports", 5, Duration.ofSeconds(30));
            Throttler throttler = new Throttler(
                    ThrottleStoreContract.this.store,
                    List.of(two),
                    java.util.Map.of("reports", java.util.Map.of("pro", five)),
                    List.of());
            throttler.tryAcquire("reports", "k");
            throttler.tryAcquire("reports", "k");
            assertThat(throttler.tryAcquire("reports", null, "k", 1).allowed()).isFalse();
            assertThat(throttler.tryAcquire("reports", "pro", "k", 1)).isEqualTo(allow(5, 2, 30_000));
        }

        /**
         * 64 threads on one key with a limit of 3: each takes a slot, counts itself in progress inside
         * the guarded work, and releases; never more than 3 are in progress at once.
         */
        @Test
        void sixtyFourThreadsOnOneKeyNeverHaveMoreThanTheLimitInProgress() throws Exception {
            if (!runsConcurrency()) {
                aStoreThatDoesNotRunConcurrencyRefusesToBindIt();
                return;
            }
            Throttler throttler = throttler(new ConcurrencyPolicy("three", 3, Duration.ofMinutes(1)));
            java.util.concurrent.atomic.AtomicInteger inProgress = new java.util.concurrent.atomic.AtomicInteger();
            java.util.concurrent.atomic.AtomicInteger most = new java.util.concurrent.atomic.AtomicInteger();
            java.util.concurrent.atomic.AtomicInteger ran = new java.util.concurrent.atomic.AtomicInteger();
            int threads = 64;
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                CountDownLatch start = new CountDownLatch(1);
                List<Future<?>> done = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    done.add(pool.submit(() -> {
                        start.await();
                        for (int i = 0; i < 20; i++) {
                            Decision slot = throttler.tryAcquire("three", "hot");
                            if (!slot.allowed()) {
                                Thread.yield();
                                continue;
                            }
                            try {
                                int now = inProgress.incrementAndGet();
                                most.accumulateAndGet(now, Math::max);
                                ran.incrementAndGet();
                                Thread.yield();
                                inProgress.decrementAndGet();
                            } finally {
                                throttler.bound("three").refund("hot", 1, slot);
                            }
                        }
                        return null;
                    }));
                }
                start.countDown();
                for (Future<?> future : done) {
                    future.get(5, TimeUnit.MINUTES);
                }
            } finally {
                pool.shutdownNow();
            }
            assertThat(most.get()).isBetween(1, 3);
            assertThat(ran.get()).as("slots were taken and released").isGreaterThan(3);
            assertThat(throttler.peek("three", "hot").remaining())
                    .as("every slot released")
                    .isEqualTo(3);
        }

        /** Both slots of "k" taken, for the waiting cases. */
        private List<Decision> fill(Throttler throttler) {
            Decision first = throttler.tryAcquire("reports", "k");
            Decision second = throttler.tryAcquire("reports", "k");
            assertThat(first.allowed() && second.allowed()).isTrue();
            return List.of(first, second);
        }

        /**
         * A call that may wait takes the slot released while it waits, told at once by the release
         * rather than by the one-second hint it would otherwise try again after.
         */
        @Test
        void aCallThatWaitsTakesTheSlotReleasedWhileItWaits() throws Exception {
            if (!runsConcurrency()) {
                aStoreThatDoesNotRunConcurrencyRefusesToBindIt();
                return;
            }
            Throttler throttler = throttler(this.reports);
            List<Decision> held = fill(throttler);
            java.util.concurrent.CompletableFuture<Decision> waiter = throttler
                    .acquireAsync("reports", "k", 1, Duration.ofSeconds(20))
                    .toCompletableFuture();
            // just after the waiter's retry at its one-second hint: its next comes a second later
            Thread.sleep(1_100);
            assertThat(waiter).as("every slot is in use").isNotDone();
            long released = System.nanoTime();
            release(throttler, held.get(0));
            Decision slot = waiter.get(20, TimeUnit.SECONDS);
            long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - released);
            assertThat(slot.allowed()).isTrue();
            assertThat(slot.waitMillis()).as("it waited already").isZero();
            assertThat(tookMillis).as("told by the release, not by the hint").isLessThan(500);
            assertThat(inUse(throttler)).isEqualTo(2);
            release(throttler, slot);
            assertThat(inUse(throttler)).isEqualTo(1);
        }

        @Test
        void aCallThatWaitsIsRefusedWithTheHintWhenNoSlotFreesInTime() {
            if (!runsConcurrency()) {
                aStoreThatDoesNotRunConcurrencyRefusesToBindIt();
                return;
            }
            Throttler throttler = throttler(this.reports);
            fill(throttler);
            long started = System.nanoTime();
            assertThatThrownBy(() -> throttler.acquire("reports", "k", 1, Duration.ofMillis(300)))
                    .isInstanceOfSatisfying(
                            ThrottledException.class,
                            (refused) -> assertThat(refused.getDecision().retryAfterMillis())
                                    .isEqualTo(1_000));
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started))
                    .as("it waited its wait out")
                    .isGreaterThanOrEqualTo(300);
            assertThat(inUse(throttler)).isEqualTo(2);
        }

        @Test
        void aWaiterThatIsCancelledTakesNoSlotAndTheNextWaiterGetsIt() throws Exception {
            if (!runsConcurrency()) {
                aStoreThatDoesNotRunConcurrencyRefusesToBindIt();
                return;
            }
            Throttler throttler = throttler(this.reports);
            List<Decision> held = fill(throttler);
            java.util.concurrent.CompletableFuture<Decision> cancelled = throttler
                    .acquireAsync("reports", "k", 1, Duration.ofSeconds(20))
                    .toCompletableFuture();
            Thread.sleep(100);
            java.util.concurrent.CompletableFuture<Decision> next = throttler
                    .acquireAsync("reports", "k", 1, Duration.ofSeconds(20))
                    .toCompletableFuture();
            Thread.sleep(100);
            cancelled.cancel(false);
            release(throttler, held.get(0));
            Decision slot = next.get(20, TimeUnit.SECONDS);
            assertThat(slot.allowed()).isTrue();
            Thread.sleep(200);
            assertThat(inUse(throttler))
                    .as("the cancelled waiter holds nothing: the slots are the one kept and the next waiter's")
                    .isEqualTo(2);
            release(throttler, held.get(1));
            release(throttler, slot);
            assertThat(inUse(throttler)).isZero();
        }

        @Test
        void aThreadInterruptedWhileItWaitsIsRefusedKeepsItsInterruptAndTakesNoSlot() throws Exception {
            if (!runsConcurrency()) {
                aStoreThatDoesNotRunConcurrencyRefusesToBindIt();
                return;
            }
            Throttler throttler = throttler(this.reports);
            List<Decision> held = fill(throttler);
            java.util.concurrent.atomic.AtomicReference<Object> outcome =
                    new java.util.concurrent.atomic.AtomicReference<>();
            Thread waiter = new Thread(() -> {
                try {
                    throttler.acquire("reports", "k", 1, Duration.ofSeconds(20));
                    outcome.set("allowed");
                } catch (ThrottledException ex) {
                    outcome.set(Thread.currentThread().isInterrupted() ? "refused, interrupted" : "refused");
                }
            });
            waiter.start();
            Thread.sleep(200);
            waiter.interrupt();
            waiter.join(10_000);
            assertThat(outcome.get()).isEqualTo("refused, interrupted");
            release(throttler, held.get(0));
            Thread.sleep(200);
            assertThat(inUse(throttler)).as("the released slot stays free").isEqualTo(1);
        }

        /** Waiters of one instance, each refused once already, take the released slots in the order they came. */
        @Test
        void waitersTakeReleasedSlotsInTheOrderTheyCame() throws Exception {
            if (!runsConcurrency()) {
                aStoreThatDoesNotRunConcurrencyRefusesToBindIt();
                return;
            }
            Throttler throttler = throttler(this.reports);
            List<Decision> held = fill(throttler);
            List<java.util.concurrent.CompletableFuture<Decision>> waiters = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                waiters.add(throttler
                        .acquireAsync("reports", "k", 1, Duration.ofSeconds(20))
                        .toCompletableFuture());
                Thread.sleep(50);
            }
            Thread.sleep(150);
            release(throttler, held.get(0));
            Decision first = waiters.get(0).get(20, TimeUnit.SECONDS);
            Thread.sleep(100);
            assertThat(waiters.get(1)).as("one release, one slot").isNotDone();
            release(throttler, held.get(1));
            Decision second = waiters.get(1).get(20, TimeUnit.SECONDS);
            Thread.sleep(100);
            assertThat(waiters.get(2)).isNotDone();
            release(throttler, first);
            Decision third = waiters.get(2).get(20, TimeUnit.SECONDS);
            release(throttler, second);
            release(throttler, third);
            assertThat(inUse(throttler)).isZero();
        }

        /**
         * 64 threads on one key with a limit of 3, each waiting for its slot: every call runs, never
         * more than 3 at once.
         */
        @Test
        void sixtyFourThreadsThatWaitAllRunAndNeverMoreThanTheLimitAtOnce() throws Exception {
            if (!runsConcurrency()) {
                aStoreThatDoesNotRunConcurrencyRefusesToBindIt();
                return;
            }
            Throttler throttler = throttler(new ConcurrencyPolicy("three", 3, Duration.ofMinutes(1)));
            java.util.concurrent.atomic.AtomicInteger inProgress = new java.util.concurrent.atomic.AtomicInteger();
            java.util.concurrent.atomic.AtomicInteger most = new java.util.concurrent.atomic.AtomicInteger();
            java.util.concurrent.atomic.AtomicInteger ran = new java.util.concurrent.atomic.AtomicInteger();
            int threads = 64;
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                CountDownLatch start = new CountDownLatch(1);
                List<Future<?>> done = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    done.add(pool.submit(() -> {
                        start.await();
                        try (dev.throttle.Slot slot = throttler.enter("three", "hot", Duration.ofMinutes(2))) {
                            int now = inProgress.incrementAndGet();
                            most.accumulateAndGet(now, Math::max);
                            ran.incrementAndGet();
                            Thread.sleep(2);
                            inProgress.decrementAndGet();
                        }
                        return null;
                    }));
                }
                start.countDown();
                for (Future<?> future : done) {
                    future.get(5, TimeUnit.MINUTES);
                }
            } finally {
                pool.shutdownNow();
            }
            assertThat(most.get()).isBetween(1, 3);
            assertThat(ran.get()).as("every call waited for its slot and ran").isEqualTo(threads);
            assertThat(throttler.peek("three", "hot").remaining())
                    .as("every slot released")
                    .isEqualTo(3);
        }
    }

    @FunctionalInterface
    private interface ThreadBody {

        long run(int thread) throws Exception;
    }

    /**
     * Reservations: a call that may wait for its turn. One atomic step answers allowed now, allowed
     * for a turn within the wait (what the call costs taken already, so every later call is decided
     * after it), or refused when the turn would come later, taking nothing. A reservation that may
     * not wait is exactly today's decision; a turn given back by its receipt goes to the next caller.
     */
    @Nested
    class ActualCost {

        /** 10 tokens, one more a second. */
        private final Policy bucket = TokenBucketPolicy.of("tb", 10, Duration.ofSeconds(1));

        /** 10 calls per 10 seconds: one interval a second. */
        private final Policy gcra = new GcraPolicy("gcra", 10, Duration.ofSeconds(10));

        /** 10 calls a minute. */
        private final Policy window = new FixedWindowPolicy("fw", 10, Duration.ofMinutes(1));

        /** On a store that cannot charge after the call, a settlement that would charge says so. */
        private boolean refusedWhereTheStoreCannotCharge(Throttler throttler, String policy) {
            if (chargesAfterTheCall()) {
                return false;
            }
            assertThatThrownBy(() -> throttler.estimate(policy, "k", 1))
                    .isInstanceOf(UnsupportedOperationException.class);
            assertThat(throttler.peek(policy, "k").allowed())
                    .as("nothing taken")
                    .isTrue();
            return true;
        }

        @Test
        void aHigherActualCostTakesTheDifferenceAndALowerOneGivesItBack() {
            Throttler throttler = throttler(this.bucket, this.gcra, this.window);
            if (refusedWhereTheStoreCannotCharge(throttler, "tb")) {
                return;
            }
            for (String policy : List.of("tb", "gcra", "fw")) {
                assertThat(throttler.estimate(policy, "up", 1).settle(4))
                        .as(policy + ": no debt")
                        .isZero();
                assertThat(throttler.peek(policy, "up").remaining())
                        .as(policy + ": settled up to 4")
                        .isEqualTo(6);
                Estimate estimate = throttler.estimate(policy, "down", 5);
                assertThat(throttler.peek(policy, "down").remaining()).isEqualTo(5);
                assertThat(estimate.settle(2)).isZero();
                assertThat(throttler.peek(policy, "down").remaining())
                        .as(policy + ": settled down to 2")
                        .isEqualTo(8);
                assertThat(throttler.estimate(policy, "none", 3).settle(0)).isZero();
                assertThat(throttler.peek(policy, "none").remaining())
                        .as(policy + ": a call that cost nothing took nothing")
                        .isEqualTo(10);
            }
        }

        @Test
        void aTokenBucketGoesIntoDebtAndRefusesUntilTheRefillsPayIt() {
            Throttler throttler = throttler(this.bucket);
            if (refusedWhereTheStoreCannotCharge(throttler, "tb")) {
                return;
            }
            assertThat(throttler.estimate("tb", "k", 1).settle(15)).as("owes 5").isEqualTo(5);
            assertThat(throttler.peek("tb", "k"))
                    .as("refused until 6 tokens are back: the debt and the call's own")
                    .isEqualTo(reject(10, 0, 6_000, 15_000));
            assertThat(throttler.tryAcquire("tb", "k", 1)).isEqualTo(reject(10, 0, 6_000, 15_000));
            advance(5_000);
            assertThat(throttler.tryAcquire("tb", "k", 1))
                    .as("the debt is paid, nothing left yet")
                    .isEqualTo(reject(10, 0, 1_000, 10_000));
            advance(1_000);
            assertThat(throttler.tryAcquire("tb", "k", 1).allowed()).isTrue();
        }

        @Test
        void aKeyInDebtIsKeptPastThePolicysIdleExpiryUntilItsDebtIsPaid() {
            Throttler throttler = throttler(this.bucket);
            if (refusedWhereTheStoreCannotCharge(throttler, "tb")) {
                return;
            }
            throttler.estimate("tb", "k", 1).settle(20);
            advance(13_000);
            assertThat(throttler.peek("tb", "k").remaining())
                    .as("20 used, 13 back: an empty bucket fills in 10 s, yet the debt is still counted")
                    .isEqualTo(3);
        }

        @Test
        void gcraRunsItsScoreBeyondTheToleranceByTheDebt() {
            Throttler throttler = throttler(this.gcra);
            if (refusedWhereTheStoreCannotCharge(throttler, "gcra")) {
                return;
            }
            assertThat(throttler.estimate("gcra", "k", 1).settle(15)).isEqualTo(5);
            assertThat(throttler.peek("gcra", "k")).isEqualTo(reject(10, 0, 6_000, 15_000));
            advance(6_000);
            assertThat(throttler.tryAcquire("gcra", "k", 1).allowed()).isTrue();
            assertThat(throttler.tryAcquire("gcra", "k", 1).allowed()).isFalse();
        }

        @Test
        void aFixedWindowCarriesItsDebtIntoTheNextWindowOnly() {
            Throttler throttler = throttler(this.window);
            if (refusedWhereTheStoreCannotCharge(throttler, "fw")) {
                return;
            }
            assertThat(throttler.estimate("fw", "k", 1).settle(15))
                    .as("5 carried into the next window")
                    .isEqualTo(5);
            assertThat(throttler.peek("fw", "k")).isEqualTo(reject(10, 0, 60_000, 120_000));
            advance(60_000);
            assertThat(throttler.peek("fw", "k").remaining())
                    .as("the next window starts with the debt")
                    .isEqualTo(5);
            assertThat(throttler.estimate("fw", "big", 1, 100).settle(500))
                    .as("never more than the next window holds")
                    .isEqualTo(10);
            advance(60_000);
            assertThat(throttler.peek("fw", "big").allowed()).isFalse();
            advance(60_000);
            assertThat(throttler.peek("fw", "big").remaining())
                    .as("the window after the next owes nothing")
                    .isEqualTo(10);
        }

        @Test
        void theDebtIsBoundedSoOneHugeCallCannotLockAKeyForDays() {
            Throttler throttler = throttler(this.bucket, this.gcra);
            if (refusedWhereTheStoreCannotCharge(throttler, "tb")) {
                return;
            }
            assertThat(throttler.estimate("tb", "k", 1).settle(1_000_000)).isEqualTo(10);
            assertThat(throttler.peek("tb", "k")).isEqualTo(reject(10, 0, 11_000, 20_000));
            assertThat(throttler.estimate("gcra", "k", 1, 3).settle(Long.MAX_VALUE))
                    .as("the longest actual cost, bounded by its own debt bound")
                    .isEqualTo(3);
            assertThat(throttler.peek("gcra", "k")).isEqualTo(reject(10, 0, 4_000, 13_000));
            assertThat(throttler.estimate("tb", "zero", 1, 0).settle(50))
                    .as("no debt at all: the bucket only empties")
                    .isZero();
            assertThat(throttler.peek("tb", "zero")).isEqualTo(reject(10, 0, 1_000, 10_000));
        }

        @Test
        void everyLimitOfAPolicyWithSeveralLimitsTakesTheActualCost() {
            Policy search = MultiLimitPolicy.of(
                    TokenBucketPolicy.of("search", 2, Duration.ofSeconds(1)),
                    TokenBucketPolicy.of("search", 5, Duration.ofHours(1)));
            Throttler throttler = throttler(search);
            if (refusedWhereTheStoreCannotCharge(throttler, "search")) {
                return;
            }
            assertThat(throttler.estimate("search", "k", 1, 10).settle(4))
                    .as("the largest debt: 2 of the burst limit")
                    .isEqualTo(2);
            Decision peek = throttler.peek("search", "k");
            assertThat(peek.limit(0)).isEqualTo(reject(2, 0, 3_000, 4_000));
            assertThat(peek.limit(1).remaining()).isEqualTo(1);
        }

        @Test
        void anEstimateIsSettledOnceAndASecondSettlementChangesNothing() {
            Throttler throttler = throttler(this.bucket);
            if (refusedWhereTheStoreCannotCharge(throttler, "tb")) {
                return;
            }
            Estimate estimate = throttler.estimate("tb", "k", 2);
            assertThatIllegalArgumentException().isThrownBy(() -> estimate.settle(-1));
            assertThat(estimate.isSettled()).as("a bad cost settles nothing").isFalse();
            estimate.settle(3);
            assertThatIllegalStateException()
                    .isThrownBy(() -> estimate.settle(1))
                    .withMessageContaining("once");
            assertThatIllegalStateException().isThrownBy(() -> estimate.settle(9));
            assertThat(throttler.peek("tb", "k").remaining()).isEqualTo(7);
        }

        @Test
        void onlyTheAlgorithmsThatCarryADebtTakeAnActualCost() {
            Throttler throttler = throttler(
                    LockoutPolicy.of("lock", LUCIA_LADDER),
                    new SlidingLogPolicy("log", 3, Duration.ofHours(1), Duration.ofSeconds(15), 1.5));
            for (String policy : List.of("lock", "log")) {
                assertThatIllegalArgumentException()
                        .isThrownBy(() -> throttler.estimate(policy, "k", 1))
                        .withMessageContaining("cannot carry a debt");
            }
            assertThat(throttler.peek("log", "k").remaining())
                    .as("nothing taken")
                    .isEqualTo(3);
        }

        /**
         * 8 threads, 2,000 calls each, with a frozen clock (no refill): each call is charged an
         * estimate of 1 and settled to a random cost from 0 to 20. The debt bound covers what 8
         * calls in flight can overshoot, so every settlement is charged in full, and the key's state
         * is exactly the sum of what the admitted calls cost: never more than the capacity and the
         * debt bound.
         */
        @Test
        void concurrentCallsWithRandomActualCostsAreChargedExactly() throws Exception {
            int capacity = 1_000;
            int maxDebt = 8 * 20;
            Throttler throttler = throttler(new TokenBucketPolicy("tb", capacity, 1, Duration.ofHours(1)));
            if (refusedWhereTheStoreCannotCharge(throttler, "tb")) {
                return;
            }
            ExecutorService pool = Executors.newFixedThreadPool(8);
            try {
                List<Future<long[]>> results = new ArrayList<>();
                for (int t = 0; t < 8; t++) {
                    long seed = t;
                    results.add(pool.submit(() -> {
                        java.util.Random random = new java.util.Random(seed);
                        long admitted = 0;
                        long cost = 0;
                        for (int i = 0; i < 2_000; i++) {
                            Estimate estimate;
                            try {
                                estimate = throttler.estimate("tb", "k", 1, maxDebt);
                            } catch (ThrottledException refused) {
                                continue;
                            }
                            int actual = random.nextInt(21);
                            estimate.settle(actual);
                            admitted++;
                            cost += actual;
                        }
                        return new long[] {admitted, cost};
                    }));
                }
                long admitted = 0;
                long cost = 0;
                for (Future<long[]> result : results) {
                    long[] counts = result.get(5, TimeUnit.MINUTES);
                    admitted += counts[0];
                    cost += counts[1];
                }
                Decision after = throttler.peek("tb", "k");
                long used = after.allowed()
                        ? capacity - after.remaining()
                        : capacity - 1 + after.retryAfterMillis() / 3_600_000;
                assertThat(used)
                        .as("the state is what the %d admitted calls cost", admitted)
                        .isEqualTo(cost);
                assertThat(cost).isLessThanOrEqualTo(capacity + maxDebt);
                assertThat(cost).as("the budget was used up").isGreaterThanOrEqualTo(capacity);
            } finally {
                pool.shutdownNow();
            }
        }
    }

    @Nested
    class Reservations {

        private Decision reserve(Throttler throttler, String policy, int cost, long maxWaitMillis) {
            return throttler.bound(policy).reserve("k", cost, Duration.ofMillis(maxWaitMillis));
        }

        /** On a store that reserves no turns, a call that may wait is decided at once, as without a wait. */
        private void aReservationIsAPlainDecisionOnAStoreThatDoesNotReserve() {
            Throttler throttler = throttler(new GcraPolicy("g", 2, Duration.ofSeconds(10)));
            assertThat(reserve(throttler, "g", 1, 60_000).allowed()).isTrue();
            assertThat(reserve(throttler, "g", 1, 60_000).allowed()).isTrue();
            Decision third = reserve(throttler, "g", 1, 60_000);
            assertThat(third.allowed()).as("no future turn taken").isFalse();
            assertThat(third.waitMillis()).isZero();
            assertThat(throttler.bound("g").tryAcquire("k", 1).retryAfterMillis())
                    .as("the refused reservation took nothing")
                    .isEqualTo(third.retryAfterMillis());
        }

        private Decision reserved(int limit, long resetAfter, long wait) {
            return Decision.reserved(limit, 0, resetAfter, 0, 1, wait);
        }

        @Test
        void aReservationThatMayNotWaitIsExactlyTodaysDecisionOnEveryAlgorithm() {
            List<Policy> policies = List.of(
                    TokenBucketPolicy.of("tb", 3, Duration.ofSeconds(2)),
                    new GcraPolicy("gcra", 3, Duration.ofSeconds(6)),
                    new FixedWindowPolicy("fw", 3, Duration.ofSeconds(10)),
                    new SlidingLogPolicy("log", 3, Duration.ofHours(1), Duration.ofSeconds(15), 1.5),
                    LockoutPolicy.of("lock", LUCIA_LADDER));
            Throttler throttler = throttler(policies.toArray(Policy[]::new));
            for (Policy policy : policies) {
                for (int i = 0; i < 5; i++) {
                    Decision plain = throttler.tryAcquire(policy.name(), "plain");
                    Decision reserved = throttler.bound(policy.name()).reserve("reserved", 1, Duration.ZERO);
                    assertThat(reserved).as(policy.name() + " call " + i).isEqualTo(plain);
                    assertThat(reserved.waitMillis()).isZero();
                    advance(700);
                }
            }
        }

        @Test
        void gcraReservesTheNextTurnsInOrderAndRefusesATurnBeyondTheWait() {
            if (!reservesTurns()) {
                aReservationIsAPlainDecisionOnAStoreThatDoesNotReserve();
                return;
            }
            Throttler throttler = throttler(new GcraPolicy("g", 10, Duration.ofSeconds(1)));
            for (int i = 0; i < 10; i++) {
                assertThat(reserve(throttler, "g", 1, 1_000).waitMillis()).isZero();
            }
            assertThat(reserve(throttler, "g", 1, 1_000)).isEqualTo(reserved(10, 1_100, 100));
            assertThat(reserve(throttler, "g", 1, 1_000)).isEqualTo(reserved(10, 1_200, 200));
            assertThat(reserve(throttler, "g", 2, 1_000))
                    .as("a cost of two intervals")
                    .isEqualTo(reserved(10, 1_400, 400));
            assertThat(throttler.tryAcquire("g", "k"))
                    .as("a call that does not wait comes after every reserved turn")
                    .isEqualTo(reject(10, 0, 500, 1_400));
            assertThat(reserve(throttler, "g", 1, 499))
                    .as("a turn 500 ms away is beyond a wait of 499 ms: refused, nothing taken")
                    .isEqualTo(reject(10, 0, 500, 1_400));
            assertThat(reserve(throttler, "g", 1, 500)).isEqualTo(reserved(10, 1_500, 500));
            advance(500);
            assertThat(throttler.tryAcquire("g", "k"))
                    .as("the turns that came were taken by those who waited")
                    .isEqualTo(reject(10, 0, 100, 1_000));
        }

        @Test
        void gcraWaitersThatGiveUpTheirTurnsInAnyOrderGiveBackEveryTurn() {
            if (!reservesTurns()) {
                aReservationIsAPlainDecisionOnAStoreThatDoesNotReserve();
                return;
            }
            for (String order : List.of("as taken", "reversed", "interleaved")) {
                Throttler throttler = throttler(new GcraPolicy("g", 2, Duration.ofSeconds(1)));
                List<Decision> waiters = new ArrayList<>();
                for (int i = 0; i < 10; i++) {
                    Decision taken = throttler.bound("g").reserve("k-" + order, 1, Duration.ofSeconds(30));
                    assertThat(taken.allowed()).isTrue();
                    if (i >= 2) {
                        waiters.add(taken);
                    }
                }
                List<Decision> givenUp = new ArrayList<>(waiters);
                if (order.equals("reversed")) {
                    Collections.reverse(givenUp);
                } else if (order.equals("interleaved")) {
                    givenUp = List.of(
                            waiters.get(3),
                            waiters.get(0),
                            waiters.get(7),
                            waiters.get(1),
                            waiters.get(5),
                            waiters.get(2),
                            waiters.get(6),
                            waiters.get(4));
                }
                for (Decision waiter : givenUp) {
                    throttler.bound("g").refund("k-" + order, 1, waiter);
                }
                assertThat(throttler.tryAcquire("g", "k-" + order))
                        .as("given up %s: only the burst of two is left, the next turn 500 ms away", order)
                        .isEqualTo(reject(2, 0, 500, 1_000));
            }
        }

        @Test
        void aTokenBucketGoesBelowEmptyByWhatTheRefillsWithinTheWaitBring() {
            if (!reservesTurns()) {
                aReservationIsAPlainDecisionOnAStoreThatDoesNotReserve();
                return;
            }
            Throttler throttler = throttler(TokenBucketPolicy.of("tb", 2, Duration.ofSeconds(1)));
            assertThat(reserve(throttler, "tb", 2, 3_000)).isEqualTo(allow(2, 0, 2_000));
            assertThat(reserve(throttler, "tb", 1, 3_000)).isEqualTo(reserved(2, 3_000, 1_000));
            assertThat(reserve(throttler, "tb", 1, 3_000)).isEqualTo(reserved(2, 4_000, 2_000));
            assertThat(throttler.tryAcquire("tb", "k")).isEqualTo(reject(2, 0, 3_000, 4_000));
            assertThat(reserve(throttler, "tb", 2, 3_500))
                    .as("two tokens come 4 s from now, beyond the wait")
                    .isEqualTo(reject(2, 0, 4_000, 4_000));
            assertThat(reserve(throttler, "tb", 1, 3_000)).isEqualTo(reserved(2, 5_000, 3_000));
            advance(1_000);
            assertThat(throttler.tryAcquire("tb", "k"))
                    .as("the refill went to the caller that waited for it")
                    .isEqualTo(reject(2, 0, 3_000, 4_000));
            advance(3_000);
            assertThat(throttler.tryAcquire("tb", "k")).isEqualTo(allow(2, 0, 2_000));
        }

        @Test
        void aFixedWindowReservesInTheNextWindowAndNeverInTheOneAfter() {
            if (!reservesTurns()) {
                aReservationIsAPlainDecisionOnAStoreThatDoesNotReserve();
                return;
            }
            Throttler throttler = throttler(new FixedWindowPolicy("fw", 2, Duration.ofSeconds(10)));
            assertThat(reserve(throttler, "fw", 2, 20_000)).isEqualTo(allow(2, 0, 10_000));
            advance(4_000);
            assertThat(reserve(throttler, "fw", 1, 5_999))
                    .as("the next window opens in 6 s")
                    .isEqualTo(reject(2, 0, 6_000, 6_000));
            assertThat(reserve(throttler, "fw", 1, 6_000)).isEqualTo(reserved(2, 16_000, 6_000));
            assertThat(throttler.tryAcquire("fw", "k"))
                    .as("the current window stays full; the next one still has room")
                    .isEqualTo(reject(2, 0, 6_000, 16_000));
            assertThat(reserve(throttler, "fw", 1, 20_000)).isEqualTo(reserved(2, 16_000, 6_000));
            assertThat(reserve(throttler, "fw", 1, 20_000))
                    .as("only the current and the next window take calls")
                    .isEqualTo(reject(2, 0, 16_000, 16_000));
            assertThat(throttler.peek("fw", "k")).isEqualTo(reject(2, 0, 16_000, 16_000));
            advance(6_000);
            assertThat(throttler.tryAcquire("fw", "k"))
                    .as("the next window opened on time with its two reserved calls")
                    .isEqualTo(reject(2, 0, 10_000, 10_000));
            advance(10_000);
            assertThat(throttler.tryAcquire("fw", "k")).isEqualTo(allow(2, 1, 10_000));
        }

        @Test
        void aReservationGivenBackByItsReceiptGoesToTheNextCaller() {
            if (!reservesTurns()) {
                aReservationIsAPlainDecisionOnAStoreThatDoesNotReserve();
                return;
            }
            Throttler throttler = throttler(
                    new GcraPolicy("g", 10, Duration.ofSeconds(1)),
                    TokenBucketPolicy.of("tb", 2, Duration.ofSeconds(1)),
                    new FixedWindowPolicy("fw", 2, Duration.ofSeconds(10)));
            for (String policy : List.of("g", "tb", "fw")) {
                int quota = throttler.policy(policy).quota();
                assertThat(reserve(throttler, policy, quota, 0).allowed()).isTrue();
                Decision first = reserve(throttler, policy, 1, 20_000);
                Decision second = reserve(throttler, policy, 1, 20_000);
                assertThat(first.waitMillis()).as(policy).isPositive();
                Decision third = throttler.peek(policy, "k");
                throttler.bound(policy).refund("k", 1, second);
                Decision again = reserve(throttler, policy, 1, 20_000);
                assertThat(again)
                        .as(policy + ": the turn given back is the next caller's")
                        .isEqualTo(second);
                assertThat(throttler.peek(policy, "k")).as(policy).isEqualTo(third);
            }
        }

        @Test
        void aRefusedReservationTakesNothing() {
            Throttler throttler = throttler(
                    new GcraPolicy("g", 2, Duration.ofSeconds(1)),
                    TokenBucketPolicy.of("tb", 2, Duration.ofSeconds(1)),
                    new FixedWindowPolicy("fw", 2, Duration.ofSeconds(10)));
            for (String policy : List.of("g", "tb", "fw")) {
                reserve(throttler, policy, 2, 0);
                reserve(throttler, policy, 2, 20_000);
                Decision before = throttler.peek(policy, "k");
                Decision refused = reserve(throttler, policy, 2, 1);
                assertThat(refused.allowed()).as(policy).isFalse();
                assertThat(refused.retryAfterMillis())
                        .as(policy)
                        .isEqualTo(throttler.tryAcquire(policy, "k", 2).retryAfterMillis());
                assertThat(throttler.peek(policy, "k")).as(policy).isEqualTo(before);
            }
        }

        @Test
        void aLockoutASlidingLogAndSeveralLimitsCannotWait() {
            Throttler throttler = throttler(
                    LockoutPolicy.of("lock", LUCIA_LADDER),
                    SlidingLogPolicy.withDefaults("log"),
                    MultiLimitPolicy.of(
                            TokenBucketPolicy.of("two", 2, Duration.ofSeconds(1)),
                            TokenBucketPolicy.of("two", 3, Duration.ofHours(1))));
            org.assertj.core.api.Assertions.assertThatIllegalArgumentException()
                    .isThrownBy(() -> reserve(throttler, "lock", 1, 1_000))
                    .withMessageContaining("a lockout that can be waited out protects nothing");
            org.assertj.core.api.Assertions.assertThatIllegalArgumentException()
                    .isThrownBy(() -> reserve(throttler, "log", 1, 1_000))
                    .withMessageContaining("protects nothing");
            org.assertj.core.api.Assertions.assertThatIllegalArgumentException()
                    .isThrownBy(() -> reserve(throttler, "two", 1, 1_000))
                    .withMessageContaining("several limits");
        }

        @Test
        void eightThreadsReservingOnOneKeyGetEveryTurnOnceInTheOrderTheyReserved() throws Exception {
            if (!reservesTurns()) {
                aReservationIsAPlainDecisionOnAStoreThatDoesNotReserve();
                return;
            }
            // an hour's period: a key Redis expires on its own clock outlives the slowest thread
            Throttler throttler = throttler(new GcraPolicy("g", 100, Duration.ofHours(1)));
            List<Long> waits = java.util.Collections.synchronizedList(new ArrayList<>());
            ExecutorService pool = Executors.newFixedThreadPool(8);
            try {
                CountDownLatch start = new CountDownLatch(1);
                List<Future<?>> results = new ArrayList<>();
                for (int t = 0; t < 8; t++) {
                    results.add(pool.submit(() -> {
                        start.await();
                        for (int i = 0; i < 50; i++) {
                            Decision decision = reserve(throttler, "g", 1, 200 * 36_000);
                            if (decision.allowed()) {
                                waits.add(decision.waitMillis());
                            }
                        }
                        return null;
                    }));
                }
                start.countDown();
                for (Future<?> result : results) {
                    result.get(5, TimeUnit.MINUTES);
                }
            } finally {
                pool.shutdownNow();
            }
            List<Long> expected = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                expected.add(0L);
            }
            for (long turn = 1; turn <= 200; turn++) {
                expected.add(turn * 36_000);
            }
            assertThat(waits)
                    .as("the burst now, then one turn per 36 s up to the wait of 200 turns, each turn once")
                    .containsExactlyInAnyOrderElementsOf(expected);
        }
    }
}
