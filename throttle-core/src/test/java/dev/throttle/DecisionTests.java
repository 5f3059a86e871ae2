package dev.throttle;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

class DecisionTests {

	@Test
	void retryAfterInSecondsIsRoundedUpAndNeverZeroForARefusal() {
		assertThat(Decision.reject(1, 0, 1, 1).retryAfterSeconds()).isEqualTo(1);
		assertThat(Decision.reject(1, 0, 1000, 1).retryAfterSeconds()).isEqualTo(1);
		assertThat(Decision.reject(1, 0, 1001, 1).retryAfterSeconds()).isEqualTo(2);
		assertThat(Decision.reject(1, 0, 0, 0).retryAfterMillis()).isEqualTo(1);
		assertThat(Decision.allow(1, 1, 0).retryAfterSeconds()).isZero();
	}

	@Test
	void anAllowedDecisionCannotCarryAWait() {
		assertThatIllegalArgumentException().isThrownBy(() -> new Decision(true, 1, 0, 5, 0));
		assertThatIllegalArgumentException().isThrownBy(() -> new Decision(false, 1, 0, 0, 0));
	}

	@Test
	void aCostThatCanNeverPassSaysSo() {
		Decision never = Decision.neverAllowed(3);
		assertThat(never.allowed()).isFalse();
		assertThat(never.canSucceedLater()).isFalse();
		assertThat(Decision.reject(3, 0, 10, 10).canSucceedLater()).isTrue();
		assertThat(new ThrottledException(new GcraPolicy("api", 3, java.time.Duration.ofMinutes(1)), never))
			.hasMessage("Policy 'api' can never grant this call: its cost is more than the 3 the policy allows at once")
			.satisfies((ex) -> assertThat(ex.getStackTrace()).isEmpty());
	}

}
