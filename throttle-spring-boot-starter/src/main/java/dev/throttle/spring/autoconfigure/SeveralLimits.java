package dev.throttle.spring.autoconfigure;

import dev.throttle.Algorithm;
import dev.throttle.InvalidPolicyException;
import dev.throttle.MultiLimitPolicy;
import dev.throttle.Policy;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Reads {@code throttle.policies.<name>.limits} (and a plan's {@code limits}): each entry holds
 * numbers of the policy's algorithm only, and a mistake names the entry's property, such as
 * {@code throttle.policies.search.limits[1].refill-period}.
 */
final class SeveralLimits {

    private SeveralLimits() {}

    /**
     * Builds a policy of several limits, or adds what is wrong to {@code problems} and returns null.
     * @param name the policy's name
     * @param path the property that holds {@code limits}, for example {@code throttle.policies.search}
     * @param algorithm the policy's algorithm
     * @param limits the entries
     * @param problems where mistakes go
     * @return the policy, or null
     */
    static Policy create(
            String name,
            String path,
            Algorithm<?> algorithm,
            List<ThrottleProperties.Policy> limits,
            List<String> problems) {
        if (!algorithm.takesSeveralLimits()) {
            problems.add(path + ".limits cannot be used with the " + algorithm.id()
                    + " algorithm: only token-bucket, gcra and fixed-window take several limits");
            return null;
        }
        int before = problems.size();
        List<Policy> built = new ArrayList<>();
        for (int i = 0; i < limits.size(); i++) {
            String at = path + ".limits[" + i + "]";
            ThrottleProperties.Policy limit = limits.get(i);
            if (limit == null) {
                problems.add(at + " needs the numbers of one limit");
                continue;
            }
            if (limit.getAlgorithm() != null
                    || limit.getMode() != null
                    || !limit.getPlans().isEmpty()
                    || !limit.getLimits().isEmpty()
                    || limit.isResetOnSuccess()
                    || limit.getFailureMode() != null
                    || limit.getNearCache() != null
                    || limit.getCount() != ThrottleProperties.Count.ALL) {
                problems.add(at + " may set only numbers of the " + algorithm.id() + " algorithm ("
                        + String.join(", ", algorithm.parameters()) + ")");
                continue;
            }
            Map<String, Object> numbers = PolicyFactory.parameters(limit);
            List<String> unknown = numbers.keySet().stream()
                    .filter((n) -> !algorithm.parameters().contains(n))
                    .toList();
            if (!unknown.isEmpty()) {
                unknown.forEach((parameter) -> problems.add(at + "." + parameter + " means nothing to the "
                        + algorithm.id() + " algorithm, which takes " + String.join(", ", algorithm.parameters())));
                continue;
            }
            try {
                built.add(algorithm.create(name, numbers));
            } catch (InvalidPolicyException ex) {
                problems.add(at + "." + ex.parameter() + " " + ex.problem());
            }
        }
        return (problems.size() > before) ? null : new MultiLimitPolicy(name, built);
    }
}
