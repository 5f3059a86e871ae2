package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Algorithm;
import dev.throttle.CalendarWindow;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.LockoutPolicy;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.TokenBucketPolicy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.List;
import org.junit.jupiter.api.Test;

class RedisThrottleScriptsTests {

    @Test
    void theStoreMapsEachAlgorithmByItsNameToItsScript() {
        assertThat(Algorithm.all())
                .extracting(RedisThrottleScripts::fileName)
                .containsExactly(
                        "token_bucket.lua",
                        "gcra.lua",
                        "fixed_window.lua",
                        "sliding_log.lua",
                        "lockout.lua",
                        "concurrency.lua");
    }

    @Test
    void aPolicysScriptIsItsNumbersThenItsAlgorithmsBody() {
        String gcra = RedisThrottleScripts.of(new GcraPolicy("api", 3, Duration.ofSeconds(1)))
                .getScriptAsString();
        assertThat(gcra)
                .startsWith("local P = {3, 333333, 999999}\n")
                .contains("local limit, interval, tolerance = P[1], P[2], P[3]");
        assertThat(RedisThrottleScripts.of(TokenBucketPolicy.of("ip", 20, Duration.ofSeconds(30)))
                        .getScriptAsString())
                .startsWith("local P = {20, 1, 30000}\n");
        assertThat(RedisThrottleScripts.of(new FixedWindowPolicy("fw", 5, Duration.ofMinutes(15)))
                        .getScriptAsString())
                .startsWith("local P = {5, 900000}\n");
        assertThat(RedisThrottleScripts.of(LockoutPolicy.of(
                                "login", List.of(Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofMinutes(5))))
                        .getScriptAsString())
                .startsWith("local P = {");
    }

    @Test
    void aFixedWindowOfTheCalendarHasAScriptOfItsOwnThatReadsTheBoundariesSentWithEachCall() {
        FixedWindowPolicy month = FixedWindowPolicy.calendar(
                "tokens", 100_000, CalendarWindow.of(CalendarWindow.Unit.MONTH, ZoneId.of("Europe/Berlin")));
        assertThat(RedisThrottleScripts.fileName(month)).isEqualTo("fixed_window_calendar.lua");
        assertThat(RedisThrottleScripts.fileName(new FixedWindowPolicy("fw", 5, Duration.ofMinutes(15))))
                .isEqualTo("fixed_window.lua");
        assertThat(RedisThrottleScripts.of(month).getScriptAsString())
                .startsWith("local P = {100000, 0}\n")
                .contains(RedisThrottleScripts.text(RedisThrottleScripts.PRELUDE))
                .endsWith(RedisThrottleScripts.text("fixed_window_calendar.lua"));
        PolicyScript.CalendarBoundaries boundaries = new PolicyScript.CalendarBoundaries(month);
        long march = Instant.parse("2026-03-15T00:00:00Z").toEpochMilli();
        byte[] sent = boundaries.argument(march);
        assertThat(new String(sent, StandardCharsets.US_ASCII))
                .as("Berlin's midnights from December 1st to June 1st")
                .isEqualTo(String.join(
                        ",",
                        Long.toString(Instant.parse("2025-12-31T23:00:00Z").toEpochMilli()),
                        Long.toString(Instant.parse("2026-01-31T23:00:00Z").toEpochMilli()),
                        Long.toString(Instant.parse("2026-02-28T23:00:00Z").toEpochMilli()),
                        Long.toString(Instant.parse("2026-03-31T22:00:00Z").toEpochMilli()),
                        Long.toString(Instant.parse("2026-04-30T22:00:00Z").toEpochMilli()),
                        Long.toString(Instant.parse("2026-05-31T22:00:00Z").toEpochMilli())));
        assertThat(boundaries.argument(march + 1))
                .as("computed again only when the application's time leaves its window")
                .isSameAs(sent);
    }

    @Test
    void betweenTheNumbersAndTheBodyEveryScriptHasThePrelude() {
        for (Algorithm<?> algorithm : Algorithm.all()) {
            assertThat(RedisThrottleScripts.text(RedisThrottleScripts.fileName(algorithm)))
                    .as(algorithm.id())
                    .startsWith("-- ")
                    .doesNotContainPattern("(?m)^local P ")
                    .doesNotContain("redis.call('TIME')");
        }
        FixedWindowPolicy policy = new FixedWindowPolicy("fw", 5, Duration.ofMinutes(15));
        assertThat(RedisThrottleScripts.of(policy).getScriptAsString())
                .isEqualTo(RedisThrottleScripts.parameterLine(policy)
                        + RedisThrottleScripts.text(RedisThrottleScripts.PRELUDE)
                        + RedisThrottleScripts.text("fixed_window.lua"));
        assertThat(RedisThrottleScripts.text(RedisThrottleScripts.PRELUDE))
                .contains("redis.call('TIME')")
                .doesNotContainPattern("(?m)^local P ");
    }

    @Test
    void theLockoutLadderAndTheSlidingLogsDelaysFollowTheirFirstNumbers() {
        LockoutPolicy lockout =
                LockoutPolicy.of("login", List.of(Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofMinutes(5)));
        assertThat(RedisThrottleScripts.parameterLine(lockout))
                .isEqualTo("local P = {" + lockout.expireAfter().toMillis() + ", 1000, 2000, 300000}\n");
        SlidingLogPolicy log = SlidingLogPolicy.withDefaults("email");
        // the log's bound and its delays, as the algorithm derives them (AlgorithmTests checks those)
        long[] numbers = log.algorithm().numbersOf(log);
        StringBuilder expected = new StringBuilder("local P = {10, 3600000, " + numbers[2]);
        for (int i = 3; i < numbers.length; i++) {
            expected.append(", ").append(numbers[i]);
        }
        assertThat(RedisThrottleScripts.parameterLine(log))
                .isEqualTo(expected.append("}\n").toString());
    }

    @Test
    void theSameNumbersGiveTheSameScriptAndOtherNumbersAnother() {
        String sha = RedisThrottleScripts.of(new GcraPolicy("api", 100, Duration.ofMinutes(1)))
                .getSha1();
        assertThat(RedisThrottleScripts.of(new GcraPolicy("api", 100, Duration.ofMinutes(1)))
                        .getSha1())
                .isEqualTo(sha);
        assertThat(RedisThrottleScripts.of(new GcraPolicy("other-name", 100, Duration.ofMinutes(1)))
                        .getSha1())
                .as("the name is not in the script: equal policies share one cached script")
                .isEqualTo(sha);
        assertThat(RedisThrottleScripts.of(new GcraPolicy("api", 101, Duration.ofMinutes(1)))
                        .getSha1())
                .isNotEqualTo(sha);
    }
}
