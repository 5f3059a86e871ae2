package dev.throttle.spring.autoconfigure;

import dev.throttle.spring.ThrottleConfigurationException;
import java.util.LinkedHashSet;
import java.util.Set;
import org.apache.commons.logging.LogFactory;

/**
 * {@code throttle.policies.<name>.durability}: which policies' writes wait for a Redis replica, and
 * what the other stores say of it. Apart from the store configurations, so that the memory and jdbc
 * stores use it without Spring Data Redis on the classpath.
 */
final class PolicyDurability {

    private PolicyDurability() {}

    /**
     * The policies with {@code durability: replicated}; a concurrency policy cannot have it (a slot
     * taken again after a failover would be held until its lease ends).
     */
    static Set<String> replicated(ThrottleProperties properties) {
        Set<String> replicated = new LinkedHashSet<>();
        properties.getPolicies().forEach((name, policy) -> {
            if (policy.getDurability() == ThrottleProperties.Durability.REPLICATED) {
                if ("concurrency".equals(policy.getAlgorithm())) {
                    throw new ThrottleConfigurationException("throttle.policies." + name + ".durability=replicated "
                            + "is for rate limits and lockouts: a concurrency policy's slots are freed by their lease "
                            + "after a failover; remove durability from this policy");
                }
                replicated.add(name);
            }
        });
        return replicated;
    }

    /** The bans with {@code durability: replicated}. */
    static Set<String> replicatedBans(ThrottleProperties properties) {
        Set<String> replicated = new LinkedHashSet<>();
        properties.getBans().forEach((name, ban) -> {
            if (ban.getDurability() == ThrottleProperties.Durability.REPLICATED) {
                replicated.add(name);
            }
        });
        return replicated;
    }

    /**
     * Warns that the policies with {@code durability: replicated} keep it on a store that has no
     * replicas (memory, jdbc): nothing waits there.
     */
    static void warnUnused(ThrottleProperties properties, String store) {
        Set<String> replicated = new LinkedHashSet<>();
        properties.getPolicies().forEach((name, policy) -> {
            if (policy.getDurability() == ThrottleProperties.Durability.REPLICATED) {
                replicated.add(name);
            }
        });
        replicated.addAll(replicatedBans(properties));
        if (!replicated.isEmpty()) {
            LogFactory.getLog(PolicyDurability.class)
                    .warn("durability: replicated (policies and bans " + String.join(", ", replicated)
                            + ") is for the Redis store; the " + store + " store has no replicas to wait for, so it "
                            + "does nothing here");
        }
    }
}
