package dev.throttle;

import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;

import dev.throttle.memory.MemoryThrottleStore;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

class ThrottlerTests {

	private final ManualTimeSource clock = new ManualTimeSource();

	private final Throttler throttler = new Throttler(new MemoryThrottleStore(this.clock, 100),
			List.of(new GcraPolicy("api", 1, Duration.ofSeconds(10))));

	@Test
	void anUnknownPolicyIsAnErrorThatListsTheKnownOnes() {
		assertThatIllegalArgumentException().isThrownBy(() -> this.throttler.tryAcquire("nope", "k"))
			.withMessage("no policy named 'nope'; known: [api]");
	}

	@Test
	void aCostBelowOneIsAnError() {
		assertThatIllegalArgumentException().isThrownBy(() -> this.throttler.tryAcquire("api", "k", 0))
			.withMessage("cost must be at least 1, was 0");
	}

	@Test
	void checkThrowsCarryingThePolicyAndTheDecision() {
		this.throttler.check("api", "k", 1);
		assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> this.throttler.check("api", "k", 1))
			.satisfies((ex) -> {
				assertThat(ex.getPolicy().name()).isEqualTo("api");
				assertThat(ex.getDecision().retryAfterMillis()).isEqualTo(10_000);
				assertThat(ex).hasMessage("Policy 'api' refused the call; retry after 10s");
			});
	}

	@Test
	void twoPoliciesWithOneNameAreRefused() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> new Throttler(new MemoryThrottleStore(),
					List.of(new GcraPolicy("api", 1, Duration.ofSeconds(1)), new GcraPolicy("api", 2, Duration.ofSeconds(1)))))
			.withMessage("two policies are named 'api'");
	}

	@Test
	void listenersHearEveryDecisionAndEveryRefusalWithTheCallersKey() {
		java.util.List<String> heard = new java.util.ArrayList<>();
		ThrottleListener listener = new ThrottleListener() {

			@Override
			public void onDecision(Policy policy, Decision decision, long storeNanos) {
				heard.add(policy.name() + ":" + decision.allowed() + ":" + (storeNanos >= 0));
			}

			@Override
			public void onRejected(Policy policy, String key, Decision decision) {
				heard.add("rejected " + key + " retry " + decision.retryAfterMillis());
			}

		};
		Throttler throttler = new Throttler(new MemoryThrottleStore(this.clock, 100),
				List.of(new GcraPolicy("api", 1, Duration.ofSeconds(10))), List.of(listener));
		throttler.tryAcquire("api", "alice@example.com");
		throttler.tryAcquire("api", "alice@example.com");
		throttler.tryAcquire("api", "alice@example.com", 2);
		assertThat(heard).containsExactly("api:true:true", "api:false:true", "rejected alice@example.com retry 10000",
				"api:false:true", "rejected alice@example.com retry " + Decision.NEVER);
	}

}
