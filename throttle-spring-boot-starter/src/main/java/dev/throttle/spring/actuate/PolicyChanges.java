package dev.throttle.spring.actuate;

import java.util.Map;

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
}
