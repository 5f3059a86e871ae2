package dev.throttle;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * What a {@link BoundPolicy} reads per call, kept apart from it: the numbers in force (the policy's
 * and its plans', each bound to the store), replaced whole by a change, and what the policy and its
 * plans share.
 */
final class PolicyBinding {

    private PolicyBinding() {}

    /** One set of numbers, bound to the store: replaced whole when the policy changes. */
    static final class Numbers {

        final Policy policy;

        final Limiter limiter;

        /**
         * The limiter again when it says who made each decision (a failure policy's), else null: then
         * every decision is the store's own, and nothing per call is needed to say so.
         */
        final @Nullable SourcedLimiter sourced;

        final Decision neverAllowed;

        /** The plans' numbers, by plan name; empty for a policy without plans. */
        final Map<String, Numbers> plans;

        /**
         * These numbers with their month windows starting on each day asked for, bound as asked (a
         * change of the policy binds them again, as it replaces these numbers); null when the window is
         * not a calendar month, which has no anchor day.
         */
        private final @Nullable AtomicReferenceArray<Numbers> anchored;

        Numbers(Policy policy, Limiter limiter, Map<String, Numbers> plans) {
            this.policy = policy;
            this.limiter = limiter;
            this.sourced = (limiter instanceof SourcedLimiter sourcedLimiter) ? sourcedLimiter : null;
            this.neverAllowed = Decision.neverAllowed(policy.quota());
            this.plans = plans;
            this.anchored = (monthOf(policy) != null) ? new AtomicReferenceArray<>(32) : null;
        }

        /**
         * These numbers with month windows that start on {@code day}, or these numbers themselves when
         * they have no month window or already start on that day.
         */
        Numbers anchored(int day, Function<Policy, Limiter> binder) {
            AtomicReferenceArray<Numbers> variants = this.anchored;
            FixedWindowPolicy month = monthOf(this.policy);
            if (variants == null || month == null || month.calendar().anchorDay() == day) {
                return this;
            }
            Numbers variant = variants.get(day);
            if (variant == null) {
                FixedWindowPolicy policy = FixedWindowPolicy.calendar(
                        month.name(), month.limit(), month.calendar().withAnchorDay(day));
                // two callers may bind the same day at once: the store's limiter is the same either way
                variants.compareAndSet(day, null, new Numbers(policy, binder.apply(policy), Map.of()));
                variant = variants.get(day);
            }
            return variant;
        }

        private static @Nullable FixedWindowPolicy monthOf(Policy policy) {
            return (policy instanceof FixedWindowPolicy window
                            && window.calendar() != null
                            && window.calendar().unit() == CalendarWindow.Unit.MONTH)
                    ? window
                    : null;
        }
    }

    /** What the policy and its plans share: the numbers in force, the store, the listeners. */
    static final class Shared {

        final String name;

        final Function<Policy, Limiter> binder;

        /** Who makes the decisions of a plain limiter, and refuses a cost above the policy's maximum. */
        final DecisionSource storeSource;

        final ThrottleListener[] listeners;

        /** Sees decisions while they are made (tracing), or null. */
        final @Nullable DecisionObserver observer;

        /** The bound plans asked for, by name; never removed, so a plan dropped later gets the base. */
        final Map<String, BoundPolicy> views = new ConcurrentHashMap<>();

        /** Unknown plan names already warned about. */
        final Set<String> warned = ConcurrentHashMap.newKeySet();

        /** The calls waiting for a concurrency slot, per key; empty for other algorithms. */
        final SlotWaits slotWaits = new SlotWaits();

        /** Whether a key reaching the debt bound has been said (once per policy). */
        final AtomicBoolean debtBoundReported = new AtomicBoolean();

        BoundPolicy base;

        volatile Numbers current;

        Shared(
                String name,
                Function<Policy, Limiter> binder,
                DecisionSource storeSource,
                ThrottleListener[] listeners,
                @Nullable DecisionObserver observer) {
            this.name = name;
            this.binder = binder;
            this.storeSource = storeSource;
            this.listeners = listeners;
            this.observer = observer;
        }

        Numbers bind(Policy policy, Map<String, ? extends Policy> plans) {
            Map<String, Numbers> bound = new LinkedHashMap<>();
            plans.forEach((plan, numbers) -> {
                check(policy, plan, numbers);
                bound.put(plan, new Numbers(numbers, this.binder.apply(numbers), Map.of()));
            });
            return new Numbers(policy, this.binder.apply(policy), Collections.unmodifiableMap(bound));
        }

        private void check(Policy policy, String plan, Policy numbers) {
            if (plan == null || plan.isBlank()) {
                throw new IllegalArgumentException("policy '" + this.name + "' has a plan without a name");
            }
            if (!policy.name().equals(this.name) || !numbers.name().equals(this.name)) {
                throw new IllegalArgumentException("plan '" + plan + "' of policy '" + this.name
                        + "' must have the policy's name, was '" + numbers.name() + "'");
            }
            if (!numbers.algorithm().equals(policy.algorithm())) {
                throw new IllegalArgumentException("plan '" + plan + "' of policy '" + this.name
                        + "' must use the policy's algorithm (" + policy.algorithm() + "), was " + numbers.algorithm());
            }
        }
    }
}
