package dev.throttle.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.LockoutPolicy;
import dev.throttle.spring.admission.PolicyDecision;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class RateLimitHeadersTests {

    private final GcraPolicy api = new GcraPolicy("api", 100, Duration.ofMinutes(1));

    private final FixedWindowPolicy login = new FixedWindowPolicy("login-ip", 5, Duration.ofMillis(900_500));

    @Test
    void oneDecisionGivesOnePolicyItemAndOneLimitItem() {
        List<PolicyDecision> decisions = List.of(new PolicyDecision(this.api, Decision.allow(100, 42, 7_001)));
        assertThat(RateLimitHeaders.policy(decisions)).isEqualTo("\"api\";q=100;w=60");
        assertThat(RateLimitHeaders.limit(decisions)).isEqualTo("\"api\";r=42;t=8");
    }

    @Test
    void severalDecisionsAreListedInOrderWithWindowsRoundedUpToWholeSeconds() {
        List<PolicyDecision> decisions = List.of(
                new PolicyDecision(this.login, Decision.allow(5, 4, 900_500)),
                new PolicyDecision(this.api, Decision.allow(100, 0, 0)));
        assertThat(RateLimitHeaders.policy(decisions)).isEqualTo("\"login-ip\";q=5;w=901, \"api\";q=100;w=60");
        assertThat(RateLimitHeaders.limit(decisions)).isEqualTo("\"login-ip\";r=4;t=901, \"api\";r=0;t=0");
    }

    @Test
    void tIsTheTimeUntilTheNextUnitNotUntilTheKeyIsNeutral() {
        LockoutPolicy lockout = LockoutPolicy.of("login", List.of(Duration.ofSeconds(1), Duration.ofSeconds(2)));
        List<PolicyDecision> allowed =
                List.of(new PolicyDecision(lockout, Decision.allow(1, 0, 3_600_000, 1_000, 1_767_225_600_000L)));
        assertThat(RateLimitHeaders.limit(allowed)).isEqualTo("\"login\";r=0;t=1");
        List<PolicyDecision> refused = List.of(new PolicyDecision(lockout, Decision.reject(1, 0, 1_500, 3_598_500)));
        assertThat(RateLimitHeaders.limit(refused))
                .as("a refusal's t is its Retry-After")
                .isEqualTo("\"login\";r=0;t=2");
        List<PolicyDecision> neutral = List.of(new PolicyDecision(lockout, Decision.allow(1, 1, 0)));
        assertThat(RateLimitHeaders.limit(neutral)).as("nothing in use").isEqualTo("\"login\";r=1;t=0");
        List<PolicyDecision> gcra = List.of(new PolicyDecision(this.api, Decision.allow(100, 0, 60_000, 601, 1)));
        assertThat(RateLimitHeaders.limit(gcra)).as("whole seconds, rounded up").isEqualTo("\"api\";r=0;t=1");
    }

    @Test
    void aPolicyItemFollowsThePolicysValuesNotJustItsName() {
        List<PolicyDecision> before = List.of(new PolicyDecision(this.api, Decision.allow(100, 1, 1)));
        List<PolicyDecision> after =
                List.of(new PolicyDecision(new GcraPolicy("api", 3, Duration.ofSeconds(10)), Decision.allow(3, 1, 1)));
        assertThat(RateLimitHeaders.policy(before)).isEqualTo("\"api\";q=100;w=60");
        assertThat(RateLimitHeaders.policy(after)).isEqualTo("\"api\";q=3;w=10");
        assertThat(RateLimitHeaders.policy(before)).isEqualTo("\"api\";q=100;w=60");
    }
}
