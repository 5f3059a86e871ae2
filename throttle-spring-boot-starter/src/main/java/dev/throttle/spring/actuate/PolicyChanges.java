package dev.throttle.spring.actuate;

import dev.throttle.spring.fleet.StoredPolicyChange;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * What the {@link ThrottleEndpoint} changes policies through at run time: the starter's
 * {@code ThrottlePolicies} bean, which validates a change against the policy's configuration and
 * applies it without losing any key's state. Implementations are thread-safe.
 */
public interface PolicyChanges {

    /**
     * Changes some settings of a policy, by their YAML names ({@code limit}, {@code refill-period},
     * {@code plans.pro.limit}, {@code mode}); settings not named keep their values.
     * @param policy the policy's name
     * @param changes setting to new value, as YAML would hold it
     * @throws IllegalArgumentException when no policy has that name
     * @throws dev.throttle.spring.ThrottleConfigurationException naming each setting that is wrong;
     * nothing changed
     */
    void update(String policy, Map<String, ?> changes);

    /**
     * Returns whether a policy is in shadow mode now.
     * @param policy the policy's name
     * @return true when it only counts what it would refuse
     */
    boolean isShadow(String policy);

    /**
     * Changes some settings of a policy, as {@link #update(String, Map)} does, naming who changes it;
     * where the store is shared by a fleet, the change reaches every instance. The default ignores
     * {@code by}.
     * @param policy the policy's name
     * @param changes setting to new value, as YAML would hold it
     * @param by who makes the change (the actuator caller's principal)
     * @throws IllegalArgumentException when no policy has that name
     * @throws dev.throttle.spring.ThrottleConfigurationException naming each setting that is wrong;
     * nothing changed
     */
    default void update(String policy, Map<String, ?> changes, String by) {
        update(policy, changes);
    }

    /**
     * Reverts a policy to its configuration; where the store is shared by a fleet, on every instance.
     * @param policy the policy's name
     * @param by who reverts it
     * @throws IllegalArgumentException when no policy has that name
     * @throws UnsupportedOperationException when this implementation cannot revert (the default)
     */
    default void revert(String policy, String by) {
        throw new UnsupportedOperationException(
                "Reverting a policy is not supported by " + getClass().getName());
    }

    /**
     * Returns the change of the fleet that a policy applies now, if any.
     * @param policy the policy's name
     * @return the change, or null when the policy applies its configuration (the default)
     */
    default @Nullable StoredPolicyChange lastChange(String policy) {
        return null;
    }

    /**
     * Returns a policy's numbers as configured (before any change at run time), by their names.
     * @param policy the policy's name
     * @return the numbers, with {@code plans} by plan name when there are plans; null when unknown
     * (the default)
     */
    default @Nullable Map<String, Object> configured(String policy) {
        return null;
    }
}
