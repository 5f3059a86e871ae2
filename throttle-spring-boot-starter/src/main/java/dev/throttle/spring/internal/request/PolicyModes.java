package dev.throttle.spring.internal.request;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;

/**
 * Which policies run in shadow mode: they decide and charge as usual, but never refuse
 * and send no {@code RateLimit} headers; what they would have refused is counted (metrics tag
 * {@code mode=shadow}) and heard by listeners. A policy's mode may change at run time: each holder
 * of a policy's {@link Switch} reads it with one volatile read, no lookup per call. Thread-safe.
 */
public final class PolicyModes {

    private final Map<String, Switch> switches = new ConcurrentHashMap<>();

    /**
     * Returns a policy's switch, the same object for the policy's whole life.
     * @param policy the policy's name
     * @return its switch
     */
    public Switch of(String policy) {
        return this.switches.computeIfAbsent(policy, (name) -> new Switch());
    }

    /**
     * Puts a policy in shadow mode, or back to enforcing.
     * @param policy the policy's name
     * @param shadow whether it only counts what it would refuse
     */
    public void set(String policy, boolean shadow) {
        of(policy).shadow = shadow;
    }

    /**
     * Whether a policy is in shadow mode.
     * @param policy the policy's name
     * @return whether it never refuses
     */
    public boolean isShadow(String policy) {
        Switch mode = this.switches.get(policy);
        return mode != null && mode.shadow;
    }

    /** One policy's mode. */
    public static final class Switch implements BooleanSupplier {

        private volatile boolean shadow;

        /**
         * Whether the policy is in shadow mode now.
         * @return whether it never refuses
         */
        @Override
        public boolean getAsBoolean() {
            return this.shadow;
        }
    }
}
