package dev.throttle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Each algorithm owns its name, its parameters with their defaults and checks, and what it says
 * about a policy; the registry finds every algorithm by its name.
 */
class AlgorithmTests {

    private static final List<Policy> ONE_OF_EACH = List.of(
            new TokenBucketPolicy("tb", 20, 5, Duration.ofSeconds(30)),
            new GcraPolicy("api", 100, Duration.ofMinutes(1)),
            new FixedWindowPolicy("fw", 5, Duration.ofMinutes(15)),
            new SlidingLogPolicy("email", 3, Duration.ofMinutes(10), Duration.ofSeconds(2), 2.0),
            new LockoutPolicy("login", List.of(Duration.ofSeconds(1), Duration.ofMinutes(5)), Duration.ofHours(2)),
            new ConcurrencyPolicy("reports", 2, Duration.ofSeconds(30)));

    @Test
    void theRegistryListsTheBuiltInAlgorithmsInOrderAndFindsEachByItsName() {
        assertThat(Algorithm.all())
                .extracting(Algorithm::id)
                .containsExactly("token-bucket", "gcra", "fixed-window", "sliding-log", "lockout", "concurrency");
        assertThat(Algorithm.ids()).isEqualTo("token-bucket, gcra, fixed-window, sliding-log, lockout, concurrency");
        for (Policy policy : ONE_OF_EACH) {
            assertThat(Algorithm.fromId(policy.algorithm().id()))
                    .isEqualTo(policy.algorithm())
                    .hasSameHashCodeAs(policy.algorithm());
            assertThat(Algorithm.all()).contains(policy.algorithm());
        }
        assertThat(Algorithm.fromId(" Fixed_Window "))
                .isEqualTo(FixedWindowPolicy.ALGORITHM)
                .isNotEqualTo(GcraPolicy.ALGORITHM);
    }

    @Test
    void aPolicysSettingsAreItsParametersInOrderAndBuildAnEqualPolicy() {
        for (Policy policy : ONE_OF_EACH) {
            Map<String, Object> settings = policy.algorithm().settings(policy);
            assertThat(settings.keySet())
                    .as(policy.name() + ": the parameters it sets, in order")
                    .containsExactlyElementsOf(policy.algorithm().parameters().stream()
                            .filter(settings::containsKey)
                            .toList());
            assertThat((Object) policy.algorithm().create(policy.name(), settings))
                    .as(policy.name())
                    .isEqualTo(policy);
        }
        assertThat(TokenBucketPolicy.ALGORITHM.settings(ONE_OF_EACH.get(0)))
                .isEqualTo(Map.of("capacity", 20, "refill-tokens", 5, "refill-period", Duration.ofSeconds(30)));
    }

    @Test
    void aFixedWindowOfTheCalendarIsSetByItsUnitZoneAndAnchorDay() {
        FixedWindowPolicy duration = new FixedWindowPolicy("fw", 3, Duration.ofSeconds(10));
        assertThat(FixedWindowPolicy.ALGORITHM.settings(duration))
                .as("a zone and an anchor day are a calendar window's only")
                .isEqualTo(Map.of("limit", 3, "window", Duration.ofSeconds(10)));
        FixedWindowPolicy billing = FixedWindowPolicy.calendar(
                "bill", 100_000, new CalendarWindow(CalendarWindow.Unit.MONTH, ZoneId.of("Europe/Berlin"), 15));
        Map<String, Object> settings = FixedWindowPolicy.ALGORITHM.settings(billing);
        assertThat(settings)
                .isEqualTo(Map.of("limit", 100_000, "window", "1M", "zone", "Europe/Berlin", "anchor-day", 15));
        assertThat(FixedWindowPolicy.ALGORITHM.create("bill", settings)).isEqualTo(billing);
        assertThat(FixedWindowPolicy.ALGORITHM.create("day", Map.of("limit", 5, "window", "1d")))
                .as("UTC unless a zone is set")
                .isEqualTo(FixedWindowPolicy.calendar(
                        "day", 5, CalendarWindow.of(CalendarWindow.Unit.DAY, ZoneId.of("UTC"))));
        assertThat(billing.window()).as("the longest month, advertised").isEqualTo(Duration.ofHours(31 * 24 + 1));
        assertThat(FixedWindowPolicy.ALGORITHM.numbersOf(billing))
                .as("a calendar window's boundaries are given per call")
                .containsExactly(100_000, 0);
    }

    @Test
    void aCalendarWindowsMistakesAreReportedByTheirParameter() {
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> FixedWindowPolicy.ALGORITHM.create("fw", Map.of("limit", 3, "window", "1y")))
                .withMessage("policy 'fw': window must be a duration (such as 10s or 1h) or a calendar window"
                        + " (1d, 1w or 1M), was '1y'");
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> FixedWindowPolicy.ALGORITHM.create(
                        "fw", Map.of("limit", 3, "window", "1M", "zone", "Mars/Olympus")))
                .withMessage("policy 'fw': zone must be a time zone such as UTC, Europe/Berlin or +02:00, was"
                        + " 'Mars/Olympus'");
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> FixedWindowPolicy.ALGORITHM.create(
                        "fw", Map.of("limit", 3, "window", Duration.ofHours(1), "zone", "UTC")))
                .withMessage("policy 'fw': zone needs a calendar window (window: 1d, 1w or 1M); a window of 3600s"
                        + " starts at the key's first call");
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() ->
                        FixedWindowPolicy.ALGORITHM.create("fw", Map.of("limit", 3, "window", "1w", "anchor-day", 15)))
                .withMessage("policy 'fw': anchor-day is for a month window (window: 1M), not 1w");
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() ->
                        FixedWindowPolicy.ALGORITHM.create("fw", Map.of("limit", 3, "window", "1M", "anchor-day", 32)))
                .withMessage("policy 'fw': anchor-day must be a day of the month, 1 to 31, was 32");
        FixedWindowPolicy month =
                FixedWindowPolicy.calendar("fw", 3, CalendarWindow.of(CalendarWindow.Unit.MONTH, ZoneId.of("UTC")));
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> MultiLimitPolicy.of(month, new FixedWindowPolicy("fw", 1, Duration.ofSeconds(1))))
                .withMessageContaining("limits cannot hold a calendar window (1M in UTC)");
    }

    @Test
    void aCalendarWindowsBoundariesSurroundTheInstantTheyAreAskedFor() {
        FixedWindowPolicy month =
                FixedWindowPolicy.calendar("m", 1, new CalendarWindow(CalendarWindow.Unit.MONTH, ZoneId.of("UTC"), 31));
        assertThat(month.boundaries(Instant.parse("2026-03-15T00:00:00Z").toEpochMilli()))
                .containsExactly(
                        Instant.parse("2025-12-31T00:00:00Z").toEpochMilli(),
                        Instant.parse("2026-01-31T00:00:00Z").toEpochMilli(),
                        Instant.parse("2026-02-28T00:00:00Z").toEpochMilli(),
                        Instant.parse("2026-03-31T00:00:00Z").toEpochMilli(),
                        Instant.parse("2026-04-30T00:00:00Z").toEpochMilli(),
                        Instant.parse("2026-05-31T00:00:00Z").toEpochMilli());
        assertThat(new FixedWindowPolicy("fw", 1, Duration.ofSeconds(1)).boundaries(0))
                .isEmpty();
    }

    @Test
    void unsetParametersTakeTheAlgorithmsDefaults() {
        assertThat(TokenBucketPolicy.ALGORITHM.create(
                        "tb", Map.of("capacity", 10, "refill-period", Duration.ofSeconds(2))))
                .isEqualTo(TokenBucketPolicy.of("tb", 10, Duration.ofSeconds(2)));
        assertThat(SlidingLogPolicy.ALGORITHM.create("email", Map.of()))
                .isEqualTo(SlidingLogPolicy.withDefaults("email"));
        List<Duration> ladder = List.of(Duration.ofSeconds(1), Duration.ofHours(3));
        assertThat(LockoutPolicy.ALGORITHM.create("login", Map.of("timeouts", ladder)))
                .isEqualTo(LockoutPolicy.of("login", ladder))
                .satisfies((policy) -> assertThat(policy.expireAfter()).isEqualTo(Duration.ofHours(3)));
        Map<String, Object> nulls = new LinkedHashMap<>();
        nulls.put("threshold", null);
        nulls.put("capacity", null);
        assertThat(SlidingLogPolicy.ALGORITHM.create("email", nulls))
                .as("null is unset")
                .isEqualTo(SlidingLogPolicy.withDefaults("email"));
    }

    @Test
    void aMissingWrongOrForeignParameterIsReportedByItsName() {
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> GcraPolicy.ALGORITHM.create("api", Map.of("limit", 3)))
                .withMessage("policy 'api': period is required")
                .satisfies((ex) -> assertThat(ex.parameter()).isEqualTo("period"));
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> GcraPolicy.ALGORITHM.create("api", Map.of("period", Duration.ofMinutes(1))))
                .withMessage("policy 'api': limit is required");
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> GcraPolicy.ALGORITHM.create(
                        "api", Map.of("limit", 3, "period", Duration.ofMinutes(1), "capacity", 5)))
                .withMessage("policy 'api': capacity means nothing to the gcra algorithm, which takes limit, period");
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(
                        () -> FixedWindowPolicy.ALGORITHM.create("fw", Map.of("limit", "3", "window", Duration.ZERO)))
                .withMessage("policy 'fw': limit must be of type Integer, was 3");
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> FixedWindowPolicy.ALGORITHM.create("fw", Map.of("limit", 3, "window", Duration.ZERO)))
                .withMessage("policy 'fw': window must be positive, was PT0S");
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> LockoutPolicy.ALGORITHM.create("login", Map.of()))
                .withMessage("policy 'login': timeouts is required");
        List<Duration> withAHole = new ArrayList<>(List.of(Duration.ofSeconds(1)));
        withAHole.add(null);
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> LockoutPolicy.ALGORITHM.create("login", Map.of("timeouts", withAHole)))
                .withMessage("policy 'login': timeouts[1] is empty");
    }

    @Test
    void eachAlgorithmGivesItsNumbersAsIntegers() {
        assertThat(TokenBucketPolicy.ALGORITHM.numbersOf(ONE_OF_EACH.get(0))).containsExactly(20, 5, 30_000);
        assertThat(GcraPolicy.ALGORITHM.numbersOf(ONE_OF_EACH.get(1))).containsExactly(100, 600_000, 60_000_000);
        assertThat(FixedWindowPolicy.ALGORITHM.numbersOf(ONE_OF_EACH.get(2))).containsExactly(5, 900_000);
        assertThat(LockoutPolicy.ALGORITHM.numbersOf(ONE_OF_EACH.get(4))).containsExactly(7_200_000, 1_000, 300_000);
        SlidingLogPolicy log = (SlidingLogPolicy) ONE_OF_EACH.get(3);
        long[] numbers = SlidingLogPolicy.ALGORITHM.numbersOf(log);
        assertThat(numbers).startsWith(3, 600_000, log.maxEntries());
        assertThat(numbers).endsWith(log.delaysMillis());
        assertThat(numbers).hasSize(3 + log.delaysMillis().length);
    }
}
