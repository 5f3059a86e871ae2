package dev.throttle.spring.metrics;

import dev.throttle.ConcurrencyPolicy;
import dev.throttle.Policy;
import dev.throttle.Throttler;
import dev.throttle.spring.admission.SlotsInUse;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;

/**
 * The gauge {@code throttle.concurrency.in-use}, one per concurrency policy (tag {@code policy},
 * never a key): the slots the calls of this instance hold now.
 */
public final class ConcurrencyMetrics implements MeterBinder {

    private final Throttler throttler;

    /**
     * Creates the gauges' binder.
     * @param throttler the throttler whose concurrency policies are measured
     */
    public ConcurrencyMetrics(Throttler throttler) {
        this.throttler = throttler;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        for (Policy policy : this.throttler.policies().values()) {
            if (policy instanceof ConcurrencyPolicy) {
                String name = policy.name();
                Gauge.builder("throttle.concurrency.in-use", () -> SlotsInUse.of(name))
                        .tag("policy", name)
                        .description("Concurrency slots held by the calls of this instance")
                        .register(registry);
            }
        }
    }
}
