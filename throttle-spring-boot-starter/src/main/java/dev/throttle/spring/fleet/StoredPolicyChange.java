package dev.throttle.spring.fleet;

import java.time.Instant;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A policy change as the shared store holds it: the settings that differ from the configuration
 * (YAML names under the policy, values as YAML would hold them, {@code limit -> 5},
 * {@code plans.pro.limit -> 50}), or none for a revert to the configuration; numbered by the store,
 * so that every instance applies the highest version and the same one.
 *
 * @param policy the policy's name
 * @param version the store's number for the change: higher is later
 * @param settings the settings that differ from the configuration, or null when the policy was reverted
 * @param by who made the change (the actuator caller's principal), or {@code "unknown"}
 * @param at when the store took the change, on the store's clock
 */
public record StoredPolicyChange(
        String policy, long version, @Nullable Map<String, String> settings, String by, Instant at) {

    /**
     * Whether this change reverts the policy to its configuration.
     * @return true when no settings differ
     */
    public boolean isRevert() {
        return this.settings == null;
    }
}
