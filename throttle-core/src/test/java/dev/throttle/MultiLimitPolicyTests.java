package dev.throttle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link MultiLimitPolicy}: what it is built from, what it advertises, and the combined decision. */
class MultiLimitPolicyTests {

    private final MultiLimitPolicy search = MultiLimitPolicy.of(
            TokenBucketPolicy.of("search", 10, Duration.ofSeconds(1)),
            TokenBucketPolicy.of("search", 1000, Duration.ofHours(1)));

    @Test
    void itsAlgorithmIsItsLimitsAndItsMaxCostAndIdleExpiryCoverEveryLimit() {
        assertThat(this.search.algorithm()).isEqualTo(TokenBucketPolicy.ALGORITHM);
        assertThat(this.search.severalLimits()).isTrue();
        assertThat(this.search.maxCost()).isEqualTo(10);
        assertThat(this.search.idleExpiry()).isEqualTo(Duration.ofHours(1000));
        assertThat(this.search.limits().get(0).severalLimits()).isFalse();
    }

    @Test
    void algorithmsWhoseStateIsNotOneNumberTakeNoSeveralLimits() {
        assertThat(Algorithm.all().stream()
                        .filter(Algorithm::takesSeveralLimits)
                        .map(Algorithm::id))
                .containsExactlyInAnyOrder("token-bucket", "gcra", "fixed-window");
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> MultiLimitPolicy.of(SlidingLogPolicy.withDefaults("login")))
                .satisfies((ex) -> assertThat(ex.parameter()).isEqualTo("limits"));
    }

    @Test
    void limitsMustShareTheNameAndTheAlgorithm() {
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> MultiLimitPolicy.of(
                        TokenBucketPolicy.of("search", 10, Duration.ofSeconds(1)),
                        new GcraPolicy("search", 10, Duration.ofMinutes(1))));
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> new MultiLimitPolicy(
                        "search", List.of(TokenBucketPolicy.of("other", 10, Duration.ofSeconds(1)))));
        assertThatExceptionOfType(InvalidPolicyException.class)
                .isThrownBy(() -> new MultiLimitPolicy("search", List.of()));
    }

    @Test
    void theActuatorSettingsListEachLimit() {
        assertThat(TokenBucketPolicy.ALGORITHM.settings(this.search))
                .isEqualTo(Map.of(
                        "limits",
                        List.of(
                                Map.of("capacity", 10, "refill-tokens", 1, "refill-period", Duration.ofSeconds(1)),
                                Map.of("capacity", 1000, "refill-tokens", 1, "refill-period", Duration.ofHours(1)))));
    }

    @Test
    void aCombinedDecisionIsAllowedOnlyWhenEveryLimitIsAndWaitsForTheLongest() {
        Decision allowed =
                Decision.ofLimits(Decision.allow(10, 9, 1_000, 1_000, 5), Decision.allow(1000, 3, 7_000, 3_600_000, 6));
        assertThat(allowed).isEqualTo(Decision.allow(1000, 3, 7_000));
        assertThat(allowed.limitCount()).isEqualTo(2);
        assertThat(allowed.limit(1).receipt()).isEqualTo(6);
        assertThat(allowed.receipt()).as("a flag that the parts carry receipts").isEqualTo(1);
        Decision refused =
                Decision.ofLimits(Decision.reject(10, 0, 1_000, 10_000), Decision.reject(1000, 0, 60_000, 90_000));
        assertThat(refused).isEqualTo(Decision.reject(10, 0, 60_000, 90_000));
        assertThat(refused.withReceipt(7).limitCount())
                .as("a receipt keeps the parts")
                .isEqualTo(2);
        Decision plain = Decision.allow(10, 9, 1_000);
        assertThat(plain.limitCount()).isEqualTo(1);
        assertThat(plain.limit(0)).isSameAs(plain);
    }
}
