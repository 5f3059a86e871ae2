package dev.throttle.spring.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;

import dev.throttle.BoundPolicy;
import dev.throttle.Decision;
import dev.throttle.DecisionSource;
import dev.throttle.GcraPolicy;
import dev.throttle.Policy;
import dev.throttle.ThrottleListener;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleMetricsAutoConfiguration;
import dev.throttle.testing.FlakyStore;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

class ThrottleMetricsTests {

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    MetricsAutoConfiguration.class,
                    ThrottleAutoConfiguration.class,
                    ThrottleMetricsAutoConfiguration.class))
            .withPropertyValues(
                    "throttle.policies.api.algorithm=gcra",
                    "throttle.policies.api.limit=2",
                    "throttle.policies.api.period=1m");

    @Test
    void waitsForATurnAreTimedByPolicyAndCallsLetInAtOnceRecordNone() {
        this.contextRunner
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .run((context) -> {
                    Throttler throttler = context.getBean(Throttler.class);
                    BoundPolicy api = throttler.bound("api");
                    for (int i = 0; i < 4; i++) {
                        // two at once, then turns 30 s and 60 s away (a minute holds two)
                        api.reserve("alice@example.com", 1, Duration.ofMinutes(2));
                    }
                    MeterRegistry registry = context.getBean(MeterRegistry.class);
                    Timer waits =
                            registry.get("throttle.wait").tags("policy", "api").timer();
                    assertThat(waits.count()).isEqualTo(2);
                    assertThat(waits.totalTime(TimeUnit.SECONDS))
                            .as("30 s and 60 s, on the system clock")
                            .isBetween(89.0, 90.0);
                    assertThat(waits.getId().getTags()).extracting(Tag::getKey).containsExactly("policy");
                });
    }

    @Test
    void actualCostsAreSummarisedByPolicyAndSettlementsThatLeaveADebtAreCounted() {
        this.contextRunner
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .run((context) -> {
                    Throttler throttler = context.getBean(Throttler.class);
                    throttler.estimate("api", "alice", 1).settle(1);
                    throttler.estimate("api", "bob", 1).settle(0);
                    throttler.estimate("api", "carol", 1).settle(3);
                    MeterRegistry registry = context.getBean(MeterRegistry.class);
                    DistributionSummary costs = registry.get(MicrometerThrottleListener.ACTUAL_COST)
                            .tag("policy", "api")
                            .summary();
                    assertThat(costs.count()).isEqualTo(3);
                    assertThat(costs.totalAmount()).isEqualTo(4);
                    assertThat(registry.get(MicrometerThrottleListener.DEBT)
                                    .tag("policy", "api")
                                    .counter()
                                    .count())
                            .as("only carol owes: 3 of a limit of 2")
                            .isEqualTo(1);
                });
    }

    @Test
    void decisionsAreCountedByPolicyOutcomeAndStoreAndTheStoreIsTimed() {
        this.contextRunner
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .run((context) -> {
                    Throttler throttler = context.getBean(Throttler.class);
                    for (int i = 0; i < 5; i++) {
                        throttler.tryAcquire("api", "alice@example.com");
                    }
                    MeterRegistry registry = context.getBean(MeterRegistry.class);
                    assertThat(registry.get("throttle.decisions")
                                    .tags("policy", "api", "outcome", "allowed", "store", "memory")
                                    .counter()
                                    .count())
                            .isEqualTo(2);
                    assertThat(registry.get("throttle.decisions")
                                    .tags("policy", "api", "outcome", "rejected", "store", "memory")
                                    .counter()
                                    .count())
                            .isEqualTo(3);
                    assertThat(registry.get("throttle.decisions")
                                    .tags("outcome", "error")
                                    .counter()
                                    .count())
                            .isZero();
                    assertThat(registry.get("throttle.store.latency")
                                    .tags("policy", "api", "store", "memory")
                                    .timer()
                                    .count())
                            .isEqualTo(5);
                    assertThat(registry.get("throttle.memory.keys").gauge().value())
                            .isEqualTo(1);
                    for (Meter meter : registry.getMeters()) {
                        assertThat(meter.getId().getTags().toString())
                                .as("no key in a tag")
                                .doesNotContain("alice");
                    }
                });
    }

    @Test
    void storeErrorsAreCountedAsTheErrorOutcome() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MicrometerThrottleListener listener = new MicrometerThrottleListener();
        listener.bindTo(registry);
        Policy policy = new GcraPolicy("api", 1, Duration.ofMinutes(1));
        // a store error is counted where it decides something: a failure mode's answer in the store's place
        listener.onDecision(
                policy,
                Decision.reject(1, 0, 1_000, 1_000),
                DecisionSource.failureMode("redis", "closed"),
                100_000_000);
        listener.onStoreError(policy, new IllegalStateException("a refund failed"));
        assertThat(registry.get("throttle.decisions")
                        .tags("policy", "api", "outcome", "error", "store", "redis")
                        .counter()
                        .count())
                .isEqualTo(1);
        assertThat(registry.find("throttle.decisions")
                        .tags("outcome", "rejected")
                        .counter()
                        .count())
                .as("counted once, as an error only")
                .isZero();
    }

    @Test
    void eachDecisionIsCountedOnceUnderTheStoreThatMadeIt() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MicrometerThrottleListener listener = new MicrometerThrottleListener();
        listener.bindTo(registry);
        GcraPolicy local = new GcraPolicy("local", 2, Duration.ofMinutes(1));
        GcraPolicy open = new GcraPolicy("open", 2, Duration.ofMinutes(1));
        FlakyStore flaky = new FlakyStore(new MemoryThrottleStore(), "flaky");
        try (ResilientThrottleStore localStore =
                        new ResilientThrottleStore(flaky, FailureMode.LOCAL, new MemoryThrottleStore());
                ResilientThrottleStore openStore = new ResilientThrottleStore(flaky, FailureMode.OPEN, null)) {
            Throttler throttler = new Throttler(localStore, List.of(local), List.of(listener));
            Throttler opened = new Throttler(openStore, List.of(open), List.of(listener));
            throttler.tryAcquire("local", "k");
            opened.tryAcquire("open", "k");
            flaky.goDown();
            for (int i = 0; i < 3; i++) {
                throttler.tryAcquire("local", "k");
                opened.tryAcquire("open", "k");
            }
            throttler.refund("local", "k", 1);
            throttler.reset("local", "k");
            opened.refund("open", "k", 1);
        }
        assertThat(counts(registry, "local"))
                .containsOnly(
                        entry("flaky allowed", 1.0),
                        entry("local allowed", 2.0),
                        entry("local rejected", 1.0),
                        entry("flaky rejected", 0.0),
                        entry("flaky error", 0.0),
                        entry("local error", 0.0));
        assertThat(counts(registry, "open"))
                .as("open's answers say nothing of the key: errors, not allowed")
                .containsOnly(entry("flaky allowed", 1.0), entry("flaky rejected", 0.0), entry("flaky error", 3.0));
        assertThat(registry.get("throttle.store.latency")
                        .tags("policy", "local", "store", "local")
                        .timer()
                        .count())
                .isEqualTo(3);
        assertThat(registry.get("throttle.store.latency")
                        .tags("policy", "local", "store", "flaky")
                        .timer()
                        .count())
                .isEqualTo(1);
    }

    @Test
    void theListenerIsAMeterBinderThatCountsInEveryRegistryItIsBoundTo() {
        MicrometerThrottleListener listener = new MicrometerThrottleListener();
        try (MemoryThrottleStore store = new MemoryThrottleStore()) {
            Throttler throttler =
                    new Throttler(store, List.of(new GcraPolicy("api", 2, Duration.ofMinutes(1))), List.of(listener));
            throttler.tryAcquire("api", "k");
            SimpleMeterRegistry first = new SimpleMeterRegistry();
            SimpleMeterRegistry second = new SimpleMeterRegistry();
            listener.bindTo(first);
            listener.bindTo(second);
            throttler.tryAcquire("api", "k");
            throttler.tryAcquire("api", "k");
            for (SimpleMeterRegistry registry : List.of(first, second)) {
                assertThat(counts(registry, "api"))
                        .as("counted from binding on")
                        .containsOnly(
                                entry("memory allowed", 1.0),
                                entry("memory rejected", 1.0),
                                entry("memory error", 0.0));
            }
        }
    }

    private static Map<String, Double> counts(MeterRegistry registry, String policy) {
        Map<String, Double> counts = new TreeMap<>();
        for (Counter counter :
                registry.find("throttle.decisions").tag("policy", policy).counters()) {
            counts.put(counter.getId().getTag("store") + " " + counter.getId().getTag("outcome"), counter.count());
        }
        return counts;
    }

    @Test
    void withoutAMeterRegistryThereAreNoMeters() {
        this.contextRunner.run((context) ->
                assertThat(context).hasSingleBean(Throttler.class).doesNotHaveBean(MicrometerThrottleListener.class));
    }

    @Test
    void theMeterListenerBacksOffWhenTheApplicationDefinesItsOwn() {
        MeterRegistry registry = new SimpleMeterRegistry();
        MicrometerThrottleListener own = new MicrometerThrottleListener();
        this.contextRunner
                .withBean(MeterRegistry.class, () -> registry)
                .withBean(MicrometerThrottleListener.class, () -> own)
                .run((context) -> assertThat(context)
                        .getBean(MicrometerThrottleListener.class)
                        .isSameAs(own));
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
