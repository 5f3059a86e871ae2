package dev.throttle.spring.metrics;

import dev.throttle.Decision;
import dev.throttle.DecisionSource;
import dev.throttle.Policy;
import dev.throttle.ThrottleListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Function;

/**
 * Records decisions as Micrometer meters, in every registry it is bound to:
 * <ul>
 * <li>{@code throttle.decisions} (counter), tagged {@code policy}, {@code store} (who decided:
 * {@code memory}, {@code redis}, or {@code local} when the local failure mode did) and {@code outcome}:
 * {@code allowed} or {@code rejected} when a store decided, {@code error} when no store could and a
 * failure mode's fixed answer ({@code open}, {@code closed}) stood in; {@code mode}: {@code enforce},
 * or {@code shadow} for a policy in shadow mode, whose {@code rejected} are the calls it would have
 * refused (and let through); and {@code near-cache}: {@code true} for a refusal the Redis store's
 * near cache repeated on this instance without a Redis call (decided locally), or one a store
 * remembered and repeated during an outage (the jdbc store's), {@code false} otherwise. Each decision is counted once, under one outcome;</li>
 * <li>{@code throttle.store.latency} (timer), tagged {@code policy} and {@code store}: how long the
 * decision took in the store, failing included;</li>
 * <li>{@code throttle.wait} (timer), tagged {@code policy}: how long each call that had to wait for its
 * turn (a policy's {@code wait}, {@code @Throttled(maxWait)}, {@code Throttler.acquire}) was given to
 * wait, recorded when its turn is reserved. A call let in at once records nothing here;</li>
 * <li>{@code throttle.actual.cost} (distribution summary), tagged {@code policy}: what each call whose
 * cost was known only after it ran ({@code @Throttled(actualCost)}, {@code Throttler.estimate}) cost;</li>
 * <li>{@code throttle.debt} (counter), tagged {@code policy}: settlements that left their key owing
 * units (debt events).</li>
 * </ul>
 * A refund or reset that failed is not a decision and is not counted here (listeners hear it as
 * {@link ThrottleListener#onStoreError}). Tags are bounded: policy names come from configuration,
 * never from callers, and no key is ever a tag.
 *
 * <p>A {@link MeterBinder}: Spring Boot binds it to the application's registry once that registry is
 * configured (a decision made before that is counted nowhere). Meters are made in every bound
 * registry when a policy and store first decide, and kept: a decision costs a map lookup and the
 * meters' own work, no allocation. Thread-safe.
 */
public final class MicrometerThrottleListener implements ThrottleListener, MeterBinder {

    /** The decisions counter's name. */
    public static final String DECISIONS = "throttle.decisions";

    /** The store latency timer's name. */
    public static final String LATENCY = "throttle.store.latency";

    /** The wait timer's name. */
    public static final String WAIT = "throttle.wait";

    /** The actual cost summary's name. */
    public static final String ACTUAL_COST = "throttle.actual.cost";

    /** The debt events counter's name. */
    public static final String DEBT = "throttle.debt";

    private static final MeterRegistry[] NONE = new MeterRegistry[0];

    /** Every registry bound so far; replaced, never changed, so meters can tell what they were made for. */
    private final AtomicReference<MeterRegistry[]> registries = new AtomicReference<>(NONE);

    private final Map<String, PolicyMeters> meters = new ConcurrentHashMap<>();

    /** Each policy's mode, asked once per policy: true while it is in shadow mode. */
    private final Function<String, ? extends BooleanSupplier> modes;

    /**
     * Creates a listener for policies that all enforce.
     */
    public MicrometerThrottleListener() {
        this((policy) -> () -> false);
    }

    /**
     * Creates a listener that tags each policy's decisions with its mode.
     * @param modes by policy name, whether the policy is in shadow mode now (asked once per policy,
     * then read per decision)
     */
    public MicrometerThrottleListener(Function<String, ? extends BooleanSupplier> modes) {
        this.modes = modes;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        this.registries.updateAndGet((bound) -> {
            MeterRegistry[] more = Arrays.copyOf(bound, bound.length + 1);
            more[bound.length] = registry;
            return more;
        });
    }

    @Override
    public void onDecision(Policy policy, Decision decision, DecisionSource source, long storeNanos) {
        MeterRegistry[] registries = this.registries.get();
        if (registries.length == 0) {
            return;
        }
        PolicyMeters policyMeters = this.meters.get(policy.name());
        if (policyMeters == null) {
            policyMeters = this.meters.computeIfAbsent(
                    policy.name(), (name) -> new PolicyMeters(name, this.modes.apply(name)));
        }
        StoreMeters meters =
                policyMeters.of(source.store(), source.isNearCache(), registries, policyMeters.shadow.getAsBoolean());
        for (Counter counter :
                source.isFailureMode() ? meters.error : decision.allowed() ? meters.allowed : meters.rejected) {
            counter.increment();
        }
        for (Timer timer : meters.latency) {
            timer.record(storeNanos, TimeUnit.NANOSECONDS);
        }
        long wait = decision.waitMillis();
        if (wait > 0) {
            for (Timer timer : meters.waits) {
                timer.record(wait, TimeUnit.MILLISECONDS);
            }
        }
    }

    /** Settlements are rarer than decisions: the registry finds the meters each time. */
    @Override
    public void onSettled(Policy policy, int estimate, long actualCost, int debt) {
        for (MeterRegistry registry : this.registries.get()) {
            DistributionSummary.builder(ACTUAL_COST)
                    .description("What calls whose cost was known only after they ran cost")
                    .tag("policy", policy.name())
                    .register(registry)
                    .record(actualCost);
            if (debt > 0) {
                Counter.builder(DEBT)
                        .description("Settlements that left their key owing units")
                        .tag("policy", policy.name())
                        .register(registry)
                        .increment();
            }
        }
    }

    /** One policy's meters, by the store that decided: one or two stores, looked up without hashing. */
    private static final class PolicyMeters {

        private final String policy;

        private final AtomicReference<StoreMeters[]> stores = new AtomicReference<>(new StoreMeters[0]);

        private final AtomicReference<StoreMeters[]> shadowStores = new AtomicReference<>(new StoreMeters[0]);

        final BooleanSupplier shadow;

        PolicyMeters(String policy, BooleanSupplier shadow) {
            this.policy = policy;
            this.shadow = shadow;
        }

        /** The store's meters in {@code registries}: made again when a registry was bound since. */
        StoreMeters of(String store, boolean nearCache, MeterRegistry[] registries, boolean shadow) {
            AtomicReference<StoreMeters[]> stores = shadow ? this.shadowStores : this.stores;
            for (; ; ) {
                StoreMeters[] known = stores.get();
                int index = 0;
                while (index < known.length && !known[index].isFor(store, nearCache)) {
                    index++;
                }
                if (index < known.length && known[index].registries == registries) {
                    return known[index];
                }
                StoreMeters[] updated = Arrays.copyOf(known, Math.max(known.length, index + 1));
                updated[index] =
                        new StoreMeters(this.policy, store, nearCache, registries, shadow ? "shadow" : "enforce");
                if (stores.compareAndSet(known, updated)) {
                    return updated[index];
                }
            }
        }
    }

    /**
     * A policy's meters for one store, one of each per registry. Registering a meter that a registry
     * has already returns that one, so making them again (a race, a registry bound later) is harmless.
     */
    private static final class StoreMeters {

        private final String store;

        private final boolean nearCache;

        private final MeterRegistry[] registries;

        private final Counter[] allowed;

        private final Counter[] rejected;

        private final Counter[] error;

        private final Timer[] latency;

        private final Timer[] waits;

        StoreMeters(String policy, String store, boolean nearCache, MeterRegistry[] registries, String mode) {
            this.store = store;
            this.nearCache = nearCache;
            this.registries = registries;
            this.allowed = counters(policy, store, nearCache, "allowed", mode, registries);
            this.rejected = counters(policy, store, nearCache, "rejected", mode, registries);
            this.error = counters(policy, store, nearCache, "error", mode, registries);
            this.latency = new Timer[registries.length];
            this.waits = new Timer[registries.length];
            for (int i = 0; i < registries.length; i++) {
                this.latency[i] = Timer.builder(LATENCY)
                        .description("Time the throttle store took to decide")
                        .tag("policy", policy)
                        .tag("store", store)
                        .register(registries[i]);
                // one timer per policy, whichever store decided: the same meter for each of its stores
                this.waits[i] = Timer.builder(WAIT)
                        .description("Time calls over the limit waited for their turn")
                        .tag("policy", policy)
                        .register(registries[i]);
            }
        }

        boolean isFor(String store, boolean nearCache) {
            // store names are the constants of a few DecisionSources: usually the same String instance
            return this.nearCache == nearCache && (this.store == store || this.store.equals(store));
        }

        private static Counter[] counters(
                String policy,
                String store,
                boolean nearCache,
                String outcome,
                String mode,
                MeterRegistry[] registries) {
            Counter[] counters = new Counter[registries.length];
            for (int i = 0; i < registries.length; i++) {
                counters[i] = Counter.builder(DECISIONS)
                        .description("Throttling decisions")
                        .tag("policy", policy)
                        .tag("outcome", outcome)
                        .tag("store", store)
                        .tag("mode", mode)
                        .tag("near-cache", Boolean.toString(nearCache))
                        .register(registries[i]);
            }
            return counters;
        }
    }
}
