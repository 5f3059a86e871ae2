package dev.throttle.spring.metrics;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.function.ToDoubleFunction;

/**
 * A gauge of one number a store holds, all policies together, read whenever the registry asks. A
 * {@link MeterBinder}, bound by Spring Boot to the application's registry.
 *
 * @param <S> the store's type
 */
abstract class StoreGauge<S> implements MeterBinder {

    private final String name;

    private final String description;

    private final S store;

    private final ToDoubleFunction<S> value;

    StoreGauge(String name, String description, S store, ToDoubleFunction<S> value) {
        this.name = name;
        this.description = description;
        this.store = store;
        this.value = value;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        Gauge.builder(this.name, this.store, this.value)
                .description(this.description)
                .register(registry);
    }
}
