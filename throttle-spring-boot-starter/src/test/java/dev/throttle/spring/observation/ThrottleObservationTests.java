package dev.throttle.spring.observation;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.DecisionObserver;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.ThrottleListener;
import dev.throttle.ThrottleStore;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleMetricsAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleObservationAutoConfiguration;
import dev.throttle.spring.metrics.MicrometerThrottleListener;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The {@code throttle.decision} observation: one per decision, blocking or not, with the policy, the
 * outcome and the store, never the key; the store is called inside it; the meters are counted as
 * before; and without an observation registry, or with a no-op one, nothing is observed.
 */
class ThrottleObservationTests {

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(
                    AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleObservationAutoConfiguration.class))
            .withPropertyValues(
                    "throttle.policies.api.algorithm=fixed-window",
                    "throttle.policies.api.limit=1",
                    "throttle.policies.api.window=1h");

    @Test
    void eachDecisionIsObservedWithItsPolicyOutcomeAndStoreAndNeverItsKey() {
        TestObservationRegistry registry = TestObservationRegistry.create();
        this.contextRunner.withBean(ObservationRegistry.class, () -> registry).run((context) -> {
            Throttler throttler = context.getBean(Throttler.class);
            assertThat(throttler.tryAcquire("api", "alice@example.com").allowed())
                    .isTrue();
            assertThat(throttler.tryAcquire("api", "alice@example.com").allowed())
                    .isFalse();
            TestObservationRegistryAssert.assertThat(registry)
                    .hasNumberOfObservationsWithNameEqualTo(ThrottleDecisionObserver.NAME, 2)
                    .hasAnObservation((observation) -> observation
                            .hasNameEqualTo("throttle.decision")
                            .hasLowCardinalityKeyValue("policy", "api")
                            .hasLowCardinalityKeyValue("outcome", "allowed")
                            .hasLowCardinalityKeyValue("store", "memory"))
                    .hasAnObservation((observation) -> observation
                            .hasNameEqualTo("throttle.decision")
                            .hasLowCardinalityKeyValue("outcome", "rejected")
                            .hasLowCardinalityKeyValue("store", "memory"));
            TestObservationRegistryAssert.assertThat(registry)
                    .hasHandledContextsThatSatisfy((contexts) -> assertThat(contexts)
                            .allSatisfy((observed) -> assertThat(
                                            observed.getAllKeyValues().toString())
                                    .doesNotContain("alice")));
        });
    }

    @Test
    void aNonBlockingDecisionIsObservedUntilItCompletes() {
        TestObservationRegistry registry = TestObservationRegistry.create();
        this.contextRunner.withBean(ObservationRegistry.class, () -> registry).run((context) -> {
            Throttler throttler = context.getBean(Throttler.class);
            Decision decision = throttler
                    .tryAcquireAsync("api", "bob", 1)
                    .toCompletableFuture()
                    .join();
            assertThat(decision.allowed()).isTrue();
            TestObservationRegistryAssert.assertThat(registry)
                    .hasSingleObservationThat()
                    .hasNameEqualTo("throttle.decision")
                    .hasBeenStopped()
                    .hasLowCardinalityKeyValue("outcome", "allowed");
        });
    }

    @Test
    void theStoreIsCalledInsideTheDecisionsObservation() {
        TestObservationRegistry registry = TestObservationRegistry.create();
        List<String> seenByTheStore = new ArrayList<>();
        ThrottleStore store = new SpyStore(new MemoryThrottleStore(TimeSource.system(), 100), () -> {
            Observation current = registry.getCurrentObservation();
            seenByTheStore.add((current != null) ? current.getContext().getName() : "none");
        });
        this.contextRunner
                .withBean(ObservationRegistry.class, () -> registry)
                .withBean(ThrottleStore.class, () -> store)
                .run((context) -> {
                    Throttler throttler = context.getBean(Throttler.class);
                    throttler.tryAcquire("api", "carol");
                    throttler
                            .tryAcquireAsync("api", "carol", 1)
                            .toCompletableFuture()
                            .join();
                    assertThat(seenByTheStore).containsExactly("throttle.decision", "throttle.decision");
                    assertThat(registry.getCurrentObservation()).isNull();
                });
    }

    @Test
    void theDecisionMetersAreCountedAsBefore() {
        TestObservationRegistry registry = TestObservationRegistry.create();
        this.contextRunner
                .withConfiguration(
                        AutoConfigurations.of(MetricsAutoConfiguration.class, ThrottleMetricsAutoConfiguration.class))
                .withBean(ObservationRegistry.class, () -> registry)
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .run((context) -> {
                    MeterRegistry meters = context.getBean(MeterRegistry.class);
                    assertThat(context).hasSingleBean(MicrometerThrottleListener.class);
                    Throttler throttler = context.getBean(Throttler.class);
                    throttler.tryAcquire("api", "dave");
                    throttler.tryAcquire("api", "dave");
                    assertThat(meters.get("throttle.decisions")
                                    .tag("outcome", "rejected")
                                    .counter()
                                    .count())
                            .isEqualTo(1);
                    TestObservationRegistryAssert.assertThat(registry)
                            .hasNumberOfObservationsWithNameEqualTo("throttle.decision", 2);
                });
    }

    @Test
    void withoutAnObservationRegistryNothingIsObserved() {
        this.contextRunner.run((context) -> {
            assertThat(context).doesNotHaveBean(DecisionObserver.class);
            assertThat(context.getBean(Throttler.class)
                            .tryAcquire("api", "erin")
                            .allowed())
                    .isTrue();
        });
    }

    @Test
    void aNoopRegistryObservesNothing() {
        assertThat(new ThrottleDecisionObserver(ObservationRegistry.NOOP).isObserving())
                .isFalse();
        assertThat(new ThrottleDecisionObserver(ObservationRegistry.create()).isObserving())
                .as("a registry without handlers is a no-op one")
                .isFalse();
        assertThat(new ThrottleDecisionObserver(TestObservationRegistry.create()).isObserving())
                .isTrue();
    }

    /** The memory store, telling the test whenever it decides. */
    private record SpyStore(ThrottleStore store, Runnable onDecide) implements ThrottleStore {

        @Override
        public Limiter limiter(Policy policy) {
            return limiter(policy, new ThrottleListener() {});
        }

        @Override
        public Limiter limiter(Policy policy, ThrottleListener listener) {
            Limiter limiter = this.store.limiter(policy, listener);
            Runnable onDecide = this.onDecide;
            return new Limiter() {

                @Override
                public Policy policy() {
                    return limiter.policy();
                }

                @Override
                public Decision tryAcquire(String key, int cost) {
                    onDecide.run();
                    return limiter.tryAcquire(key, cost);
                }

                @Override
                public void refund(String key, int cost) {
                    limiter.refund(key, cost);
                }

                @Override
                public Decision peek(String key) {
                    return limiter.peek(key);
                }

                @Override
                public void reset(String key) {
                    limiter.reset(key);
                }
            };
        }

        @Override
        public String kind() {
            return this.store.kind();
        }
    }
}
