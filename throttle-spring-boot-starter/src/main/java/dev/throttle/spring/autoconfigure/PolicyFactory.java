package dev.throttle.spring.autoconfigure;

import dev.throttle.Algorithm;
import dev.throttle.BoundPolicy;
import dev.throttle.CalendarWindow;
import dev.throttle.ConcurrencyPolicy;
import dev.throttle.InvalidPolicyException;
import dev.throttle.Policy;
import dev.throttle.spring.ThrottleConfigurationException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.BeanWrapper;
import org.springframework.beans.BeanWrapperImpl;
import org.springframework.boot.convert.DurationStyle;

/**
 * Turns {@code throttle.policies.*} into validated {@link Policy} values, or problems that name
 * the property. The algorithm named by {@code algorithm} builds the policy from the parameters
 * that are set, by their configuration names: its defaults and checks live with it. Every policy
 * is read, so that one start reports every mistake.
 */
final class PolicyFactory {

    private static final String PREFIX = "throttle.policies.";

    private PolicyFactory() {}

    /**
     * Returns the policies, or fails listing every policy that has a mistake.
     * @param properties {@code throttle.policies}
     * @return the policies, in the order configured
     * @throws ThrottleConfigurationException naming each property that is wrong
     */
    static List<Policy> create(Map<String, ThrottleProperties.Policy> properties) {
        Policies policies = read(properties);
        if (!policies.problems().isEmpty()) {
            throw new ThrottleConfigurationException(policies.problems());
        }
        return policies.valid();
    }

    /**
     * Fails with the mistakes of the policies when {@code name} is a policy configured with mistakes:
     * an entry point that names it would otherwise say it names a policy that is not configured, and
     * that would be all the start reports.
     * @param properties {@code throttle.policies}
     * @param name the policy an entry point names, or null
     * @throws ThrottleConfigurationException listing the policies' mistakes when that one has any
     */
    static void failIfItHasMistakes(Map<String, ThrottleProperties.Policy> properties, @Nullable String name) {
        if (name == null || !properties.containsKey(name.trim())) {
            return;
        }
        Policies policies = read(properties);
        if (policies.invalid().contains(name.trim())) {
            throw new ThrottleConfigurationException(policies.problems());
        }
    }

    /**
     * Reads every policy, collecting the mistakes instead of stopping at the first.
     * @param properties {@code throttle.policies}
     * @return the valid policies and a problem for each mistake
     */
    static Policies read(Map<String, ThrottleProperties.Policy> properties) {
        List<Policy> valid = new ArrayList<>();
        Map<String, Map<String, Policy>> plans = new LinkedHashMap<>();
        List<String> problems = new ArrayList<>();
        Set<String> invalid = new LinkedHashSet<>();
        properties.forEach((name, settings) -> {
            List<String> own = new ArrayList<>();
            Policy policy = create(name, settings, own);
            Map<String, Policy> planned = (policy != null) ? plans(policy, settings, own) : Map.of();
            if (own.isEmpty()) {
                valid.add(policy);
                if (!planned.isEmpty()) {
                    plans.put(name, planned);
                }
            } else {
                problems.addAll(own);
                invalid.add(name);
            }
        });
        return new Policies(List.copyOf(valid), Map.copyOf(plans), List.copyOf(problems), Set.copyOf(invalid));
    }

    /**
     * Builds one policy and its plans, as at startup: what a change at run time applies.
     * @param name the policy's name
     * @param settings its settings
     * @return the policy and its plans
     * @throws ThrottleConfigurationException naming each property that is wrong
     */
    static Planned createOne(String name, ThrottleProperties.Policy settings) {
        List<String> problems = new ArrayList<>();
        Policy policy = create(name, settings, problems);
        Map<String, Policy> plans = (policy != null) ? plans(policy, settings, problems) : Map.of();
        if (!problems.isEmpty()) {
            throw new ThrottleConfigurationException(problems);
        }
        return new Planned(policy, plans);
    }

    /**
     * A policy and its plans.
     *
     * @param policy the base numbers
     * @param plans by plan name, in configuration order
     */
    record Planned(Policy policy, Map<String, Policy> plans) {}

    /**
     * Builds a policy's plans: each its policy's parameters, with the ones the plan sets over them.
     * A plan sets numbers only: never the algorithm, the mode, plans of its own or how calls settle.
     */
    private static Map<String, Policy> plans(Policy policy, ThrottleProperties.Policy settings, List<String> problems) {
        Map<String, Policy> plans = new LinkedHashMap<>();
        Algorithm<?> algorithm = policy.algorithm();
        settings.getPlans().forEach((plan, overrides) -> {
            String path = PREFIX + policy.name() + ".plans." + plan;
            if (plan.isBlank() || overrides == null) {
                problems.add(path + " needs a name and at least one number");
                return;
            }
            if (overrides.getAlgorithm() != null
                    || overrides.getMode() != null
                    || !overrides.getPlans().isEmpty()
                    || overrides.isResetOnSuccess()
                    || overrides.getWait() != null
                    || overrides.getCount() != ThrottleProperties.Count.ALL
                    || overrides.getDurability() != ThrottleProperties.Durability.PRIMARY) {
                problems.add(path + " may set only numbers of the " + algorithm.id() + " algorithm ("
                        + String.join(", ", algorithm.parameters()) + "): algorithm, mode, plans, reset-on-success,"
                        + " wait, count and durability are the policy's");
                return;
            }
            Map<String, Object> own = parameters(overrides);
            if (!overrides.getLimits().isEmpty() || policy.severalLimits()) {
                Policy limits = planLimits(policy, path, overrides, own, problems);
                if (limits != null) {
                    plans.put(plan, limits);
                }
                return;
            }
            for (String parameter : own.keySet()) {
                if (!algorithm.parameters().contains(parameter)) {
                    problems.add(path + "." + parameter + " means nothing to the " + algorithm.id()
                            + " algorithm, which takes " + String.join(", ", algorithm.parameters()));
                    return;
                }
            }
            Map<String, Object> merged = parameters(settings);
            merged.putAll(own);
            try {
                plans.put(plan, algorithm.create(policy.name(), merged));
            } catch (InvalidPolicyException ex) {
                problems.add(path + "." + ex.parameter() + " " + ex.problem());
            } catch (IllegalArgumentException ex) {
                problems.add(path + ": " + ex.getMessage());
            }
        });
        return plans;
    }

    /** A plan of a policy with several limits overrides them as a whole, and only a policy with several limits has them. */
    private static Policy planLimits(
            Policy policy,
            String path,
            ThrottleProperties.Policy overrides,
            Map<String, Object> own,
            List<String> problems) {
        if (!policy.severalLimits()) {
            problems.add(path + ".limits needs throttle.policies." + policy.name()
                    + ".limits: a plan has several limits only when its policy has (a key keeps one state shape)");
        } else if (overrides.getLimits().isEmpty() || !own.isEmpty()) {
            problems.add(path + "."
                    + (own.isEmpty() ? "limits" : own.keySet().iterator().next()) + ": policy '"
                    + policy.name() + "' has several limits, which a plan overrides as a whole with " + path
                    + ".limits and nothing else");
        } else {
            return SeveralLimits.create(policy.name(), path, policy.algorithm(), overrides.getLimits(), problems);
        }
        return null;
    }

    /**
     * Builds one policy, or adds what is wrong with it to {@code problems} and returns null. Every
     * parameter its algorithm does not take is reported, not just the first.
     */
    private static Policy create(String name, ThrottleProperties.Policy settings, List<String> problems) {
        String path = PREFIX + name;
        if (settings.getAlgorithm() == null || settings.getAlgorithm().isBlank()) {
            problems.add(path + ".algorithm is required: one of " + Algorithm.ids());
            return null;
        }
        Algorithm<?> algorithm;
        try {
            algorithm = Algorithm.fromId(settings.getAlgorithm());
        } catch (IllegalArgumentException ex) {
            problems.add(path + ".algorithm: " + ex.getMessage());
            return null;
        }
        Map<String, Object> parameters = parameters(settings);
        if (!settings.getLimits().isEmpty()) {
            if (!parameters.isEmpty()) {
                problems.add(path + ".limits cannot be used with "
                        + String.join(
                                ", ",
                                parameters.keySet().stream()
                                        .map((parameter) -> path + "." + parameter)
                                        .toList())
                        + ": each limit has its own numbers");
                return null;
            }
            Policy several = SeveralLimits.create(name, path, algorithm, settings.getLimits(), problems);
            String wait = (several != null) ? checkWait(several, settings.getWait()) : null;
            if (wait != null) {
                problems.add(path + ".wait " + wait);
                return null;
            }
            String debt = (several != null) ? checkMaxDebt(several, settings.getMaxDebt()) : null;
            if (debt != null) {
                problems.add(path + ".max-debt " + debt);
                return null;
            }
            return several;
        }
        for (String parameter : parameters.keySet()) {
            if (!algorithm.parameters().contains(parameter)) {
                problems.add(path + "." + parameter + " means nothing to the " + algorithm.id()
                        + " algorithm, which takes " + String.join(", ", algorithm.parameters()));
            }
        }
        if (!problems.isEmpty()) {
            return null;
        }
        try {
            Policy policy = algorithm.create(name, parameters);
            String wait = checkWait(policy, settings.getWait());
            if (wait != null) {
                problems.add(path + ".wait " + wait);
                return null;
            }
            String debt = checkMaxDebt(policy, settings.getMaxDebt());
            if (debt != null) {
                problems.add(path + ".max-debt " + debt);
                return null;
            }
            if (policy instanceof ConcurrencyPolicy && (settings.isResetOnSuccess() || settings.hasCount())) {
                // a slot is released however its call ends: a reset would free the slots of other calls
                problems.add(path + (settings.isResetOnSuccess() ? ".reset-on-success" : ".count")
                        + " means nothing to the concurrency algorithm: a call's slot is released when the call"
                        + " ends, whether it succeeds or fails");
                return null;
            }
            return policy;
        } catch (InvalidPolicyException ex) {
            problems.add(path + "." + ex.parameter() + " " + ex.problem());
        } catch (IllegalArgumentException ex) {
            problems.add(path + ": " + ex.getMessage());
        }
        return null;
    }

    /**
     * Returns what is wrong with a policy's {@code max-debt}, or null: not negative, and only for the
     * algorithms that carry a debt.
     * @param policy the policy
     * @param maxDebt its debt bound, null when unset
     * @return the problem, to follow the property's path; null when there is none
     */
    static @Nullable String checkMaxDebt(Policy policy, @Nullable Integer maxDebt) {
        if (maxDebt == null) {
            return null;
        }
        if (maxDebt < 0) {
            return "must not be negative, was " + maxDebt;
        }
        String why = BoundPolicy.whyNoActualCost(policy);
        return (why != null) ? "means nothing here: " + why : null;
    }

    /**
     * Returns what is wrong with a policy's {@code wait}, or null: a wait must not be negative, and
     * only a policy that can reserve a later turn takes one longer than zero.
     * @param policy the policy
     * @param wait its wait, null when unset
     * @return the problem, as the end of a sentence after the property's name; null when fine
     */
    static @Nullable String checkWait(Policy policy, @Nullable Duration wait) {
        if (wait == null || wait.isZero()) {
            return null;
        }
        if (wait.isNegative()) {
            return "must not be negative, was " + wait;
        }
        String why = BoundPolicy.whyNoWait(policy);
        return (why == null)
                ? null
                : "cannot be used with the " + policy.algorithm().id() + " algorithm"
                        + (policy.severalLimits() ? " and several limits" : "") + ": " + why
                        + " (wait is for token-bucket, gcra and fixed-window policies of one limit)";
    }

    /**
     * What {@code throttle.policies} holds.
     *
     * @param valid the policies that can be built, in the order configured
     * @param plans the plans of the valid policies that have some, by policy name then plan name
     * @param problems what is wrong with the others, each naming its property
     * @param invalid the names of the policies that have a mistake
     */
    record Policies(
            List<Policy> valid, Map<String, Map<String, Policy>> plans, List<String> problems, Set<String> invalid) {}

    /**
     * The algorithm parameters a policy sets, by configuration name: each property of
     * {@link ThrottleProperties.Policy} that some algorithm takes and that is set. Settings every
     * policy has (such as {@code count}) are no algorithm's, so they are never among them.
     */
    static Map<String, Object> parameters(ThrottleProperties.Policy settings) {
        BeanWrapper properties = new BeanWrapperImpl(settings);
        Map<String, Object> parameters = new LinkedHashMap<>();
        for (Algorithm<?> algorithm : Algorithm.all()) {
            for (String parameter : algorithm.parameters()) {
                String property = camelCase(parameter);
                Object value = properties.isReadableProperty(property) ? properties.getPropertyValue(property) : null;
                if (value != null) {
                    parameters.putIfAbsent(parameter, value);
                }
            }
        }
        if (parameters.get("window") instanceof String window) {
            parameters.put("window", window(window));
        }
        return parameters;
    }

    /**
     * A fixed window's {@code window}: a calendar window's text as it is ({@code 1d}, {@code 1w},
     * {@code 1M}: the algorithm reads it), else a duration as Spring Boot writes them; text that is
     * neither is left for the algorithm to report, naming the property.
     */
    private static Object window(String window) {
        if (CalendarWindow.Unit.fromText(window.strip()) != null) {
            return window;
        }
        try {
            return DurationStyle.detectAndParse(window.strip());
        } catch (IllegalArgumentException ex) {
            return window;
        }
    }

    /** {@code refill-tokens} as a Java property: {@code refillTokens}. */
    static String camelCase(String parameter) {
        StringBuilder property = new StringBuilder(parameter.length());
        boolean upper = false;
        for (char c : parameter.toCharArray()) {
            if (c == '-') {
                upper = true;
            } else {
                property.append(upper ? Character.toUpperCase(c) : c);
                upper = false;
            }
        }
        return property.toString();
    }
}
