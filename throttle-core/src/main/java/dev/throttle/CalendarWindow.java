package dev.throttle;

import java.time.DayOfWeek;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.YearMonth;
import java.time.ZoneId;
import java.time.temporal.TemporalAdjusters;
import org.jspecify.annotations.Nullable;

/**
 * A window of the calendar: a day, an ISO week (from Monday) or a month, in a time zone. Windows
 * start at the calendar's boundaries (midnight in the zone, whatever the clocks did that night), so
 * a day lasts 23 to 25 hours across a daylight-saving change and a month 28 to 31 days; a month may
 * start on a day of its own ({@link #anchorDay()}, a billing day), and a month shorter than that day
 * starts on its last day.
 *
 * @param unit day, week or month
 * @param zone the time zone whose midnights are the boundaries
 * @param anchorDay the day of the month a month starts on, 1 to 31; 1 for days and weeks
 */
public record CalendarWindow(Unit unit, ZoneId zone, int anchorDay) {

    /** The units of a calendar window, as {@code window: 1d | 1w | 1M} writes them. */
    public enum Unit {
        /** A calendar day, from midnight to midnight. */
        DAY("1d", Duration.ofHours(25)),
        /** An ISO week, from Monday midnight to the next. */
        WEEK("1w", Duration.ofDays(7).plusHours(1)),
        /** A calendar month, from its anchor day's midnight to the next month's. */
        MONTH("1M", Duration.ofDays(31).plusHours(1));

        private final String text;

        private final Duration longest;

        Unit(String text, Duration longest) {
            this.text = text;
            this.longest = longest;
        }

        /**
         * Returns the unit as configuration writes it.
         * @return {@code 1d}, {@code 1w} or {@code 1M}
         */
        public String text() {
            return this.text;
        }

        /**
         * Returns the longest such a window lasts (an hour more than its days, for a daylight-saving change).
         * @return 25 hours, 7 days and an hour, or 31 days and an hour
         */
        public Duration longest() {
            return this.longest;
        }

        /**
         * Finds a unit by how configuration writes it.
         * @param text {@code 1d}, {@code 1w} or {@code 1M} (case matters: {@code 1m} is a minute)
         * @return the unit, or null when {@code text} is none of them
         */
        public static @Nullable Unit fromText(String text) {
            for (Unit unit : values()) {
                if (unit.text.equals(text)) {
                    return unit;
                }
            }
            return null;
        }
    }

    public CalendarWindow {
        if (unit == null) {
            throw new IllegalArgumentException("a calendar window needs a unit: 1d, 1w or 1M");
        }
        if (zone == null) {
            throw new IllegalArgumentException("a calendar window needs a zone");
        }
        if (anchorDay < 1 || anchorDay > 31 || (unit != Unit.MONTH && anchorDay != 1)) {
            throw new IllegalArgumentException("the anchor day of a calendar window must be between 1 and 31, and "
                    + "only a month (1M) has one, was " + anchorDay + " for " + unit.text());
        }
    }

    /**
     * A calendar window starting on the calendar's own boundaries (a month on its 1st).
     * @param unit day, week or month
     * @param zone the time zone
     * @return the window
     */
    public static CalendarWindow of(Unit unit, ZoneId zone) {
        return new CalendarWindow(unit, zone, 1);
    }

    /**
     * Returns this window starting on another day of the month (a billing day).
     * @param day the day of the month, 1 to 31
     * @return the window, or this one when it starts on that day
     * @throws IllegalArgumentException when this is not a month, or for a day outside 1 to 31
     */
    public CalendarWindow withAnchorDay(int day) {
        return (day == this.anchorDay) ? this : new CalendarWindow(this.unit, this.zone, day);
    }

    /**
     * Returns the start of the window that holds an instant.
     * @param epochMillis the instant
     * @return the window's start in epoch milliseconds, at most {@code epochMillis}
     */
    public long startOf(long epochMillis) {
        return epochMillis(firstDay(date(epochMillis)));
    }

    /**
     * Returns the end of the window that holds an instant: the next window's start.
     * @param epochMillis the instant
     * @return the window's end in epoch milliseconds, after {@code epochMillis}
     */
    public long endOf(long epochMillis) {
        return epochMillis(nextFirstDay(firstDay(date(epochMillis))));
    }

    /** The date of an instant in the zone. */
    private LocalDate date(long epochMillis) {
        return LocalDate.ofInstant(Instant.ofEpochMilli(epochMillis), this.zone);
    }

    /** The first day of the window holding {@code date}. */
    private LocalDate firstDay(LocalDate date) {
        return switch (this.unit) {
            case DAY -> date;
            case WEEK -> date.with(TemporalAdjusters.previousOrSame(DayOfWeek.MONDAY));
            case MONTH -> {
                LocalDate anchor = anchorIn(YearMonth.from(date));
                yield date.isBefore(anchor) ? anchorIn(YearMonth.from(date).minusMonths(1)) : anchor;
            }
        };
    }

    /** The first day of the window after the one starting on {@code first}. */
    private LocalDate nextFirstDay(LocalDate first) {
        return switch (this.unit) {
            case DAY -> first.plusDays(1);
            case WEEK -> first.plusWeeks(1);
            case MONTH -> anchorIn(YearMonth.from(first).plusMonths(1));
        };
    }

    /** The anchor day in a month: its last day when the month is shorter. */
    private LocalDate anchorIn(YearMonth month) {
        return month.atDay(Math.min(this.anchorDay, month.lengthOfMonth()));
    }

    /** A day's start in the zone: its first instant, midnight or later when a clock change skips midnight. */
    private long epochMillis(LocalDate day) {
        return day.atStartOfDay(this.zone).toInstant().toEpochMilli();
    }

    /**
     * Returns the window as configuration writes it.
     * @return for example {@code 1M in Europe/Berlin from day 15}
     */
    @Override
    public String toString() {
        return this.unit.text() + " in " + this.zone.getId()
                + ((this.anchorDay != 1) ? " from day " + this.anchorDay : "");
    }
}
