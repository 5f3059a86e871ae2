package dev.throttle.spring.metrics;

import java.util.ArrayList;
import java.util.List;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.throttle.Decision;
import dev.throttle.Policy;
import dev.throttle.ThrottleListener;
import dev.throttle.Throttler;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleMetricsAutoConfiguration;

import static org.assertj.core.api.Assertions.assertThat;

class ThrottleMetricsTests {

	private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleMetricsAutoConfiguration.class))
		.withPropertyValues("throttle.policies.api.algorithm=gcra", "throttle.policies.api.limit=2",
				"throttle.policies.api.period=1m");

	@Test
	void decisionsAreCountedByPolicyOutcomeAndStoreAndTheStoreIsTimed() {
		this.contextRunner.withBean(MeterRegistry.class, SimpleMeterRegistry::new).run((context) -> {
			Throttler throttler = context.getBean(Throttler.class);
			for (int i = 0; i < 5; i++) {
				throttler.tryAcquire("api", "alice@example.com");
			}
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			assertThat(registry.get("throttle.decisions").tags("policy", "api", "outcome", "allowed", "store", "memory")
				.counter()
				.count()).isEqualTo(2);
			assertThat(registry.get("throttle.decisions").tags("policy", "api", "outcome", "rejected", "store", "memory")
				.counter()
				.count()).isEqualTo(3);
			assertThat(registry.get("throttle.decisions").tags("outcome", "error").counter().count()).isZero();
			assertThat(registry.get("throttle.store.latency").tags("policy", "api", "store", "memory").timer().count())
				.isEqualTo(5);
			assertThat(registry.get("throttle.memory.keys").gauge().value()).isEqualTo(1);
			for (Meter meter : registry.getMeters()) {
				assertThat(meter.getId().getTags().toString()).as("no key in a tag").doesNotContain("alice");
			}
		});
	}

	@Test
	void storeErrorsAreCountedAsTheErrorOutcome() {
		SimpleMeterRegistry registry = new SimpleMeterRegistry();
		MicrometerThrottleListener listener = new MicrometerThrottleListener(registry, "redis");
		Policy policy = new dev.throttle.GcraPolicy("api", 1, java.time.Duration.ofMinutes(1));
		listener.onStoreError(policy, new IllegalStateException("down"));
		assertThat(registry.get("throttle.decisions").tags("policy", "api", "outcome", "error", "store", "redis")
			.counter()
			.count()).isEqualTo(1);
	}

	@Test
	void withoutAMeterRegistryThereAreNoMeters() {
		this.contextRunner.run((context) -> assertThat(context).hasSingleBean(Throttler.class)
			.doesNotHaveBean(MicrometerThrottleListener.class));
	}

	@Test
	void theMeterListenerBacksOffWhenTheApplicationDefinesItsOwn() {
		MeterRegistry registry = new SimpleMeterRegistry();
		MicrometerThrottleListener own = new MicrometerThrottleListener(registry, "custom");
		this.contextRunner.withBean(MeterRegistry.class, () -> registry)
			.withBean(MicrometerThrottleListener.class, () -> own)
			.run((context) -> assertThat(context).getBean(MicrometerThrottleListener.class).isSameAs(own));
	}

	@Test
	void applicationListenersHearEveryRefusal() {
		List<String> audit = new ArrayList<>();
		ThrottleListener auditLog = new ThrottleListener() {

			@Override
			public void onRejected(Policy policy, String key, Decision decision) {
				audit.add(policy.name() + " refused " + key);
			}

		};
		this.contextRunner.withBean(ThrottleListener.class, () -> auditLog).run((context) -> {
			Throttler throttler = context.getBean(Throttler.class);
			for (int i = 0; i < 3; i++) {
				throttler.tryAcquire("api", "bob");
			}
			assertThat(audit).containsExactly("api refused bob");
		});
	}

}
