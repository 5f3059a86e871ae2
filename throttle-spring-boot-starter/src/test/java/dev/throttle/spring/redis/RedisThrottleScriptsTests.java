package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Algorithm;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.LockoutPolicy;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.TokenBucketPolicy;
import java.time.Duration;
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
