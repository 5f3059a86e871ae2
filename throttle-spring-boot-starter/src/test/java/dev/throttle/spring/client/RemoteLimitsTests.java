package dev.throttle.spring.client;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * How long a remote's response asks to pause: each header form it may use, and what is never trusted
 * (a value that does not parse or is negative is ignored; more than a day is capped to a day).
 */
class RemoteLimitsTests {

    private static final long NOW = Instant.parse("2026-11-26T00:00:00Z").toEpochMilli();

    private static long pause(int status, String... headers) {
        Map<String, String> map = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        for (int i = 0; i < headers.length; i += 2) {
            map.put(headers[i], headers[i + 1]);
        }
        return RemoteLimits.pauseMillis("test", status, map::get, NOW);
    }

    private static String httpDate(long epochMillis) {
        return DateTimeFormatter.RFC_1123_DATE_TIME.format(
                ZonedDateTime.ofInstant(Instant.ofEpochMilli(epochMillis), ZoneOffset.UTC));
    }

    @Test
    void retryAfterInSecondsOrAsAnHttpDateOnA429OrA503() {
        assertThat(pause(429, "Retry-After", "7")).isEqualTo(7_000);
        assertThat(pause(503, "Retry-After", "2")).isEqualTo(2_000);
        assertThat(pause(429, "Retry-After", httpDate(NOW + 30_000))).isEqualTo(30_000);
    }

    @Test
    void retryAfterOnAnyOtherStatusPausesNothing() {
        assertThat(pause(200, "Retry-After", "7")).isZero();
        assertThat(pause(301, "Retry-After", "7")).isZero();
        assertThat(pause(429)).as("a 429 without a word on when").isZero();
    }

    @Test
    void theIetfRateLimitFieldPausesForTheLongestTOfAnExhaustedItem() {
        assertThat(pause(200, "RateLimit", "\"default\";r=0;t=30")).isEqualTo(30_000);
        assertThat(pause(200, "RateLimit", "\"minute\";r=5;t=10, \"day\";r=0;t=3600"))
                .isEqualTo(3_600_000);
        assertThat(pause(200, "RateLimit", "\"default\";r=3;t=30"))
                .as("room left")
                .isZero();
        assertThat(pause(200, "RateLimit", "limit=100, remaining=0, reset=12"))
                .as("an earlier draft's form")
                .isEqualTo(12_000);
        assertThat(pause(200, "RateLimit-Remaining", "0", "RateLimit-Reset", "4"))
                .as("the earlier drafts' separate fields")
                .isEqualTo(4_000);
    }

    @Test
    void xRateLimitRemainingZeroWithAResetInSecondsOrAsAnEpochSecond() {
        assertThat(pause(200, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "20"))
                .isEqualTo(20_000);
        assertThat(pause(200, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", Long.toString(NOW / 1000 + 90)))
                .as("GitHub's epoch seconds")
                .isEqualTo(90_000);
        assertThat(pause(200, "X-RateLimit-Remaining", "4", "X-RateLimit-Reset", "20"))
                .isZero();
    }

    @Test
    void theLongestOfWhatOneResponseSaysWins() {
        assertThat(pause(429, "Retry-After", "5", "RateLimit", "\"default\";r=0;t=9"))
                .isEqualTo(9_000);
    }

    @Test
    void malformedAndNegativeValuesAreIgnored() {
        assertThat(pause(429, "Retry-After", "soon")).isZero();
        assertThat(pause(429, "Retry-After", "-5")).isZero();
        assertThat(pause(429, "Retry-After", httpDate(NOW - 60_000)))
                .as("a date in the past")
                .isZero();
        assertThat(pause(200, "RateLimit", "\"default\";r=0;t=later")).isZero();
        assertThat(pause(200, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "NaN"))
                .isZero();
        assertThat(pause(200, "X-RateLimit-Remaining", "0")).as("no reset").isZero();
        assertThat(pause(429, "Retry-After", "soon", "RateLimit", "\"default\";r=0;t=3"))
                .as("a malformed field does not spoil a valid one")
                .isEqualTo(3_000);
    }

    @Test
    void moreThanADayIsCappedToADay() {
        assertThat(pause(429, "Retry-After", "999999999999")).isEqualTo(RemoteLimits.MAX_PAUSE_MILLIS);
        assertThat(pause(429, "Retry-After", "1e300")).isEqualTo(RemoteLimits.MAX_PAUSE_MILLIS);
        assertThat(pause(200, "RateLimit", "\"default\";r=0;t=172800")).isEqualTo(RemoteLimits.MAX_PAUSE_MILLIS);
    }
}
