package dev.throttle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class PolicyValidationTests {

    @Test
    void zeroCapacityIsRefusedNamingThePolicyAndTheParameter() {
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> TokenBucketPolicy.of("login-ip", 0, Duration.ofSeconds(1)))
                .withMessage("policy 'login-ip': capacity must be between 1 and 8388607, was 0")
                .satisfies((ex) -> {
                    assertThat(ex.policy()).isEqualTo("login-ip");
                    assertThat(ex.parameter()).isEqualTo("capacity");
                });
    }

    @Test
    void negativeAndZeroDurationsAreRefused() {
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> new TokenBucketPolicy("p", 1, 1, Duration.ofSeconds(-1)))
                .withMessage("policy 'p': refill-period must be positive, was PT-1S");
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> new GcraPolicy("p", 1, Duration.ZERO))
                .withMessageContaining("period must be positive");
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> new FixedWindowPolicy("p", 1, null))
                .withMessage("policy 'p': window is required");
    }

    @Test
    void durationsBeyondTenYearsOrFinerThanAMillisecondAreRefused() {
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> new GcraPolicy("p", 1, Duration.ofDays(3651)))
                .withMessageContaining("period must be at most 3650d");
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> new GcraPolicy("p", 1, Duration.ofNanos(1_500_000)))
                .withMessageContaining("whole number of milliseconds");
    }

    @Test
    void aBucketThatWouldTakeOverTenYearsToRefillIsRefused() {
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> TokenBucketPolicy.of("p", 1000, Duration.ofDays(365)))
                .withMessageContaining("more than 3650d to refill");
    }

    @Test
    void gcraNeedsAtLeastAMicrosecondPerCall() {
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> new GcraPolicy("p", 2000, Duration.ofMillis(1)))
                .withMessageContaining("limit must be at most one call per microsecond");
        assertThat(new GcraPolicy("p", 1000, Duration.ofMillis(1)).emissionIntervalMicros())
                .isEqualTo(1);
    }

    @Test
    void gcraRefusesARateItsWholeMicrosecondIntervalWouldMissByMoreThanOnePercent() {
        // 600,000 per second is an interval of 1.67 us, which whole microseconds made 1 us: 1,000,000 per second
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> new GcraPolicy("p", 600_000, Duration.ofSeconds(1)))
                .withMessage("policy 'p': limit 600000 per period 1s needs a call every 1.667 microseconds, which the"
                        + " stores keep in whole microseconds (1, a rate 66.7% too high); choose a limit and period"
                        + " whose period/limit is within 1% of a whole number of microseconds");
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> new GcraPolicy("p", 15_000, Duration.ofSeconds(1)))
                .withMessageContaining("a rate 1.0% too high");
        for (int limit : new int[] {1, 3, 7, 100, 1_000, 9_999, 10_000, 14_925, 333_333, 500_000, 1_000_000}) {
            GcraPolicy kept = new GcraPolicy("p", limit, Duration.ofSeconds(1));
            double rate = 1e6 / kept.emissionIntervalMicros();
            assertThat(rate / limit).as("limit %d", limit).isBetween(1.0, 1.01);
        }
    }

    @Test
    void gcraToleranceIsExactlyThePeriodWhenTheLimitDividesIt() {
        GcraPolicy even = new GcraPolicy("p", 3, Duration.ofSeconds(60));
        assertThat(even.emissionIntervalMicros()).isEqualTo(20_000_000);
        assertThat(even.toleranceMicros()).isEqualTo(60_000_000);
        GcraPolicy third = new GcraPolicy("p", 3, Duration.ofSeconds(1));
        assertThat(third.emissionIntervalMicros()).isEqualTo(333_333);
        assertThat(third.toleranceMicros()).isEqualTo(999_999);
    }

    @Test
    void lockoutNeedsTimeoutsAndAnExpiryNoShorterThanTheLongest() {
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> LockoutPolicy.of("login", List.of()))
                .withMessage("policy 'login': timeouts must list at least one duration");
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() ->
                        new LockoutPolicy("login", List.of(Duration.ofSeconds(1), Duration.ZERO), Duration.ofHours(1)))
                .withMessage("policy 'login': timeouts[1] must be positive, was PT0S");
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> new LockoutPolicy("login", List.of(Duration.ofMinutes(5)), Duration.ofMinutes(1)))
                .withMessageContaining("expire-after must be at least the longest timeout (300s), was 60s");
        assertThat(LockoutPolicy.of("login", List.of(Duration.ofHours(2))).expireAfter())
                .isEqualTo(Duration.ofHours(2));
    }

    @Test
    void slidingLogDelaysFollowMetabaseAndBoundTheLog() {
        SlidingLogPolicy policy = SlidingLogPolicy.withDefaults("email");
        assertThat(policy.delaysMillis()).startsWith(15_000, 42_426, 77_942, 120_000, 167_705);
        long sumBeforeLast = 0;
        long[] delays = policy.delaysMillis();
        for (int i = 0; i < delays.length - 1; i++) {
            sumBeforeLast += delays[i];
        }
        assertThat(sumBeforeLast).isLessThan(3_600_000);
        assertThat(sumBeforeLast + delays[delays.length - 1]).isGreaterThanOrEqualTo(3_600_000);
        assertThat(policy.maxEntries()).isEqualTo(10 + delays.length - 1);
    }

    @Test
    void aSlidingLogThatWouldKeepTooManyAttemptsIsRefused() {
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> new SlidingLogPolicy("p", 10, Duration.ofHours(1), Duration.ofMillis(1), 0))
                .withMessageContaining("initial-delay is too short");
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> new SlidingLogPolicy("p", 10, Duration.ofHours(1), Duration.ofSeconds(1), -1))
                .withMessageContaining("delay-exponent must be between 0 and 10");
    }

    @Test
    void policyNamesAreRestrictedToSafeCharacters() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new GcraPolicy("a{b}", 1, Duration.ofSeconds(1)))
                .withMessageContaining("policy name");
        assertThatIllegalArgumentException().isThrownBy(() -> new GcraPolicy("", 1, Duration.ofSeconds(1)));
    }

    @Test
    void algorithmsAreFoundByTheirConfigurationNames() {
        assertThat(Algorithm.fromId("token-bucket")).isEqualTo(TokenBucketPolicy.ALGORITHM);
        assertThat(Algorithm.fromId("SLIDING_LOG")).isEqualTo(SlidingLogPolicy.ALGORITHM);
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Algorithm.fromId("leaky"))
                .withMessageContaining("expected one of token-bucket, gcra, fixed-window, sliding-log, lockout");
    }
}
