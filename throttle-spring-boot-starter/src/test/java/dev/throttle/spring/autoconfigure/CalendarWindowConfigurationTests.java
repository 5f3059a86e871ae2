package dev.throttle.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.CalendarWindow;
import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.spring.ThrottleConfigurationException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * A fixed window of the calendar as configuration writes it ({@code window: 1d | 1w | 1M}, a
 * {@code zone}, a month's {@code anchor-day}), and each mistake of it reported by its property.
 */
class CalendarWindowConfigurationTests {

    private final ApplicationContextRunner contextRunner =
            new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(ThrottleAutoConfiguration.class));

    @Test
    void aMonthlyBudgetInAZoneFromABillingDayIsAFixedWindowOfTheCalendar() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.tokens.algorithm=fixed-window",
                        "throttle.policies.tokens.limit=100000",
                        "throttle.policies.tokens.window=1M",
                        "throttle.policies.tokens.zone=Europe/Berlin",
                        "throttle.policies.tokens.anchor-day=15",
                        "throttle.policies.daily.algorithm=fixed-window",
                        "throttle.policies.daily.limit=1000",
                        "throttle.policies.daily.window=1d",
                        "throttle.policies.api.algorithm=fixed-window",
                        "throttle.policies.api.limit=10",
                        "throttle.policies.api.window=10s")
                .run((context) -> {
                    Throttler throttler = context.getBean(Throttler.class);
                    assertThat(throttler.policy("tokens"))
                            .isEqualTo(FixedWindowPolicy.calendar(
                                    "tokens",
                                    100_000,
                                    new CalendarWindow(CalendarWindow.Unit.MONTH, ZoneId.of("Europe/Berlin"), 15)));
                    assertThat(throttler.policy("daily"))
                            .as("UTC unless a zone is set")
                            .isEqualTo(FixedWindowPolicy.calendar(
                                    "daily", 1000, CalendarWindow.of(CalendarWindow.Unit.DAY, ZoneId.of("UTC"))));
                    assertThat(throttler.policy("api"))
                            .as("a duration keeps its meaning: a window from the key's first call")
                            .isEqualTo(new FixedWindowPolicy("api", 10, Duration.ofSeconds(10)));
                });
    }

    /**
     * Each customer's month from their own billing day: a plan per billing day, chosen per call
     * ({@code @Throttled(plan = "'day-' + #customer.billingDay")}); the key keeps its state.
     */
    @Test
    void aPlanPerBillingDayStartsEachCustomersMonthOnTheirOwnDay() {
        ManualTimeSource clock = new ManualTimeSource(Instant.parse("2026-04-14T12:00:00Z"));
        this.contextRunner
                .withBean(TimeSource.class, () -> clock)
                .withPropertyValues(
                        "throttle.policies.tokens.algorithm=fixed-window",
                        "throttle.policies.tokens.limit=100",
                        "throttle.policies.tokens.window=1M",
                        "throttle.policies.tokens.plans.day-15.anchor-day=15",
                        "throttle.policies.tokens.plans.day-31.anchor-day=31")
                .run((context) -> {
                    Throttler throttler = context.getBean(Throttler.class);
                    assertThat(throttler.tryAcquire("tokens", null, "first-of-month", 100))
                            .isEqualTo(Decision.allow(
                                    100, 0, Duration.ofDays(16).plusHours(12).toMillis()));
                    assertThat(throttler.tryAcquire("tokens", "day-15", "alice", 100))
                            .as("Alice's month ends on the 15th")
                            .isEqualTo(
                                    Decision.allow(100, 0, Duration.ofHours(12).toMillis()));
                    assertThat(throttler.tryAcquire("tokens", "day-31", "bob", 100))
                            .as("Bob's month ends on April's last day, the 30th")
                            .isEqualTo(Decision.allow(
                                    100, 0, Duration.ofDays(15).plusHours(12).toMillis()));
                    clock.set(Instant.parse("2026-04-15T00:00:00Z"));
                    assertThat(throttler
                                    .tryAcquire("tokens", "day-15", "alice", 1)
                                    .allowed())
                            .as("Alice's new month")
                            .isTrue();
                    assertThat(throttler
                                    .tryAcquire("tokens", "day-31", "bob", 1)
                                    .allowed())
                            .isFalse();
                });
    }

    @Test
    void everyMistakeOfACalendarWindowIsReportedByItsProperty() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.year.algorithm=fixed-window",
                        "throttle.policies.year.limit=1",
                        "throttle.policies.year.window=1y",
                        "throttle.policies.mars.algorithm=fixed-window",
                        "throttle.policies.mars.limit=1",
                        "throttle.policies.mars.window=1d",
                        "throttle.policies.mars.zone=Mars/Olympus",
                        "throttle.policies.hourly.algorithm=fixed-window",
                        "throttle.policies.hourly.limit=1",
                        "throttle.policies.hourly.window=1h",
                        "throttle.policies.hourly.zone=UTC",
                        "throttle.policies.weekly.algorithm=fixed-window",
                        "throttle.policies.weekly.limit=1",
                        "throttle.policies.weekly.window=1w",
                        "throttle.policies.weekly.anchor-day=3",
                        "throttle.policies.bucket.algorithm=token-bucket",
                        "throttle.policies.bucket.capacity=1",
                        "throttle.policies.bucket.refill-period=1s",
                        "throttle.policies.bucket.zone=UTC")
                .run((context) -> assertThat(configurationFailure(context).getMessage())
                        .contains("throttle.policies.year.window must be a duration (such as 10s or 1h) or a calendar"
                                + " window (1d, 1w or 1M), was '1y'")
                        .contains("throttle.policies.mars.zone must be a time zone such as UTC, Europe/Berlin or"
                                + " +02:00, was 'Mars/Olympus'")
                        .contains("throttle.policies.hourly.zone needs a calendar window (window: 1d, 1w or 1M); a"
                                + " window of 3600s starts at the key's first call")
                        .contains("throttle.policies.weekly.anchor-day is for a month window (window: 1M), not 1w")
                        .contains("throttle.policies.bucket.zone means nothing to the token-bucket algorithm"));
    }

    private static ThrottleConfigurationException configurationFailure(AssertableApplicationContext context) {
        assertThat(context).hasFailed();
        for (Throwable current = context.getStartupFailure(); current != null; current = current.getCause()) {
            if (current instanceof ThrottleConfigurationException found) {
                return found;
            }
        }
        throw new AssertionError("no ThrottleConfigurationException in", context.getStartupFailure());
    }
}
