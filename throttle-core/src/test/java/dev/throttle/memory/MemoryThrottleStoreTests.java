package dev.throttle.memory;

import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;

import dev.throttle.GcraPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.Throttler;
import dev.throttle.TokenBucketPolicy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

class MemoryThrottleStoreTests {

	private final ManualTimeSource clock = new ManualTimeSource();

	@Test
	void keysAreForgottenOnceIdleForThePolicysIdleExpiry() {
		MemoryThrottleStore store = new MemoryThrottleStore(this.clock, 1000);
		Throttler throttler = new Throttler(store, List.of(new GcraPolicy("api", 10, Duration.ofMinutes(1)),
				SlidingLogPolicy.withDefaults("log")));
		for (int i = 0; i < 100; i++) {
			throttler.tryAcquire("api", "k" + i);
			throttler.tryAcquire("log", "k" + i);
		}
		assertThat(store.keyCount()).isEqualTo(200);
		this.clock.advance(Duration.ofMinutes(1));
		assertThat(store.keyCount()).as("gcra keys idle for its period are gone").isEqualTo(100);
		this.clock.advance(Duration.ofHours(1));
		assertThat(store.keyCount()).isZero();
	}

	@Test
	void theStoreHoldsAtMostMaximumKeysPerPolicy() {
		MemoryThrottleStore store = new MemoryThrottleStore(this.clock, 100);
		Throttler throttler = new Throttler(store, List.of(TokenBucketPolicy.of("tb", 5, Duration.ofHours(1))));
		for (int i = 0; i < 10_000; i++) {
			throttler.tryAcquire("tb", "key-" + i);
		}
		assertThat(store.keyCount()).isLessThanOrEqualTo(100);
	}

	@Test
	void clearForgetsEveryKey() {
		MemoryThrottleStore store = new MemoryThrottleStore(this.clock, 100);
		Throttler throttler = new Throttler(store, List.of(new GcraPolicy("api", 1, Duration.ofMinutes(1))));
		throttler.tryAcquire("api", "k");
		assertThat(throttler.tryAcquire("api", "k").allowed()).isFalse();
		store.clear();
		assertThat(throttler.tryAcquire("api", "k").allowed()).isTrue();
	}

	@Test
	void aPolicyNameIsBoundToOneSetOfSettings() {
		MemoryThrottleStore store = new MemoryThrottleStore(this.clock, 100);
		store.limiter(new GcraPolicy("api", 1, Duration.ofMinutes(1)));
		assertThat(store.limiter(new GcraPolicy("api", 1, Duration.ofMinutes(1)))).isNotNull();
		assertThatIllegalArgumentException().isThrownBy(() -> store.limiter(new GcraPolicy("api", 2, Duration.ofMinutes(1))))
			.withMessageContaining("already bound with other settings");
	}

	@Test
	void aClockSteppingBackwardsNeitherGrantsExtraNorBreaksTheState() {
		MemoryThrottleStore store = new MemoryThrottleStore(this.clock, 100);
		Throttler throttler = new Throttler(store, List.of(TokenBucketPolicy.of("tb", 2, Duration.ofSeconds(10))));
		throttler.tryAcquire("tb", "k", 2);
		this.clock.advance(Duration.ofHours(-1));
		assertThat(throttler.tryAcquire("tb", "k").allowed()).isFalse();
		this.clock.advance(Duration.ofHours(1).plusSeconds(10));
		assertThat(throttler.tryAcquire("tb", "k").allowed()).isTrue();
	}

	@Test
	void maximumKeysMustBePositive() {
		assertThatIllegalArgumentException().isThrownBy(() -> new MemoryThrottleStore(this.clock, 0))
			.withMessage("maximum-keys must be at least 1, was 0");
	}

}
