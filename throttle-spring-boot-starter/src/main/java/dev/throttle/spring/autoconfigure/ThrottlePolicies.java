package dev.throttle.spring.autoconfigure;

import dev.throttle.Throttler;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.actuate.PolicyChanges;
import dev.throttle.spring.internal.request.PolicyModes;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.BeanUtils;
import org.springframework.beans.BeanWrapperImpl;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.springframework.core.env.Environment;

/**
 * Changes policies at run time: the numbers of a policy and its plans, and its mode,
 * validated exactly as at startup; a change that has a mistake changes nothing. Keys keep their
 * state: each policy is bound through the store again ({@link Throttler#update}), and every call
 * sees either the numbers before or those after, never a mix. The algorithm, {@code reset-on-success}
 * and {@code count} cannot change at run time (a restart applies them).
 *
 * <p>What changes a policy: {@code POST /actuator/throttle/{policy}}, a change of the application's
 * environment (Spring Cloud's {@code EnvironmentChangeEvent}, heard without depending on Spring
 * Cloud), or the application calling {@link #update} or {@link #refresh}. Changes apply to this
 * instance only. Thread-safe: changes are applied one at a time.
 */
public final class ThrottlePolicies implements PolicyChanges {

    private static final Log logger = LogFactory.getLog(ThrottlePolicies.class);

    private static final String PREFIX = "throttle.policies.";

    private final Throttler throttler;

    private final PolicyModes modes;

    private ThrottleProperties.Mode defaultMode;

    /** The settings in force, by policy name: copies, never the bound properties themselves. */
    private final Map<String, ThrottleProperties.Policy> settings = new LinkedHashMap<>();

    ThrottlePolicies(Throttler throttler, ThrottleProperties properties, PolicyModes modes) {
        this.throttler = throttler;
        this.modes = modes;
        this.defaultMode = properties.getMode();
        properties.getPolicies().forEach((name, policy) -> {
            if (throttler.policies().containsKey(name)) {
                this.settings.put(name, copy(policy));
            }
        });
    }

    /**
     * Changes some settings of a policy, by their YAML names ({@code limit}, {@code refill-period},
     * {@code plans.pro.limit}, {@code mode}); settings not named keep their values (a plan named is
     * given as a whole). Values are what YAML would hold: {@code 2}, {@code "30s"}, {@code "1s,2s"}.
     * @param policy the policy's name
     * @param changes setting to new value; nested maps for plans ({@code {"plans": {"pro": {"limit": 5}}}})
     * @throws IllegalArgumentException when no policy has that name
     * @throws ThrottleConfigurationException naming each property that is wrong; nothing changed
     */
    @Override
    public synchronized void update(String policy, Map<String, ?> changes) {
        ThrottleProperties.Policy current = this.settings.get(policy);
        if (current == null) {
            throw new IllegalArgumentException("No throttle policy '" + policy + "' (configured: "
                    + String.join(", ", this.settings.keySet()) + ")");
        }
        Map<String, Object> flat = new LinkedHashMap<>();
        List<String> problems = new ArrayList<>();
        changes.forEach((name, value) -> flatten(policy, name, value, flat, problems));
        if (!problems.isEmpty()) {
            throw new ThrottleConfigurationException(problems);
        }
        ThrottleProperties.Policy changed = copy(current);
        try {
            new Binder(new MapConfigurationPropertySource(flat)).bind("p", Bindable.ofInstance(changed));
        } catch (BindException ex) {
            String property = ex.getName().toString().substring(2);
            Throwable cause = (ex.getCause() != null) ? ex.getCause() : ex;
            while (cause.getCause() != null) {
                cause = cause.getCause();
            }
            Object value = (ex.getProperty() != null) ? ex.getProperty().getValue() : null;
            throw new ThrottleConfigurationException(
                    PREFIX + policy + "." + property + " cannot be '" + value + "': " + cause.getMessage());
        }
        apply(Map.of(policy, changed));
    }

    /**
     * Applies {@code throttle.policies.*} and {@code throttle.mode} as the environment holds them now:
     * every policy whose settings changed, all or none.
     * @param environment the application's environment
     * @throws ThrottleConfigurationException naming each property that is wrong; nothing changed
     */
    public synchronized void refresh(Environment environment) {
        ThrottleProperties bound = Binder.get(environment).bindOrCreate("throttle", ThrottleProperties.class);
        ThrottleProperties.Mode previous = this.defaultMode;
        this.defaultMode = bound.getMode();
        try {
            Map<String, ThrottleProperties.Policy> known = new LinkedHashMap<>();
            bound.getPolicies().forEach((name, settings) -> {
                if (this.settings.containsKey(name)) {
                    known.put(name, settings);
                } else {
                    logger.warn("Policy '" + name + "' was added to the environment; a restart applies it");
                }
            });
            apply(known);
        } catch (RuntimeException ex) {
            this.defaultMode = previous;
            throw ex;
        }
        this.settings.forEach((name, settings) -> this.modes.set(name, isShadow(settings)));
    }

    /**
     * Returns whether a policy is in shadow mode now.
     * @param policy the policy's name
     * @return true when it only counts what it would refuse
     */
    @Override
    public boolean isShadow(String policy) {
        return this.modes.isShadow(policy);
    }

    /** Validates every policy given, then applies those whose settings changed; none when one has a mistake. */
    private void apply(Map<String, ThrottleProperties.Policy> policies) {
        List<String> problems = new ArrayList<>();
        Map<String, PolicyFactory.Planned> built = new LinkedHashMap<>();
        policies.forEach((name, changed) -> {
            try {
                PolicyFactory.Planned planned = PolicyFactory.createOne(name, changed);
                ThrottleProperties.Policy current = this.settings.get(name);
                if (!planned.policy()
                        .algorithm()
                        .equals(this.throttler.policy(name).algorithm())) {
                    problems.add(PREFIX + name + ".algorithm cannot change at run time ("
                            + this.throttler.policy(name).algorithm()
                            + "): its keys' state would mean nothing under another; restart to change it");
                }
                if (changed.isResetOnSuccess() != current.isResetOnSuccess()
                        || changed.getCount() != current.getCount()) {
                    problems.add(PREFIX + name + ".reset-on-success and count cannot change at run time; restart to"
                            + " change them");
                }
                built.put(name, planned);
            } catch (ThrottleConfigurationException ex) {
                problems.addAll(ex.problems());
            }
        });
        if (!problems.isEmpty()) {
            throw new ThrottleConfigurationException(problems);
        }
        built.forEach((name, planned) -> {
            ThrottleProperties.Policy changed = policies.get(name);
            boolean numbers = !planned.policy().equals(this.throttler.policy(name))
                    || !planned.plans().equals(this.throttler.plans(name));
            if (numbers) {
                this.throttler.update(planned.policy(), planned.plans());
                logger.info("Policy '" + name + "' now applies " + planned.policy()
                        + (planned.plans().isEmpty() ? "" : " with plans " + planned.plans()));
            }
            boolean shadow = isShadow(changed);
            if (shadow != this.modes.isShadow(name)) {
                this.modes.set(name, shadow);
                logger.info("Policy '" + name + "' is now in " + (shadow ? "shadow" : "enforce") + " mode");
            }
            this.settings.put(name, copy(changed));
        });
    }

    private boolean isShadow(ThrottleProperties.Policy settings) {
        ThrottleProperties.Mode mode = Objects.requireNonNullElse(settings.getMode(), this.defaultMode);
        return mode == ThrottleProperties.Mode.SHADOW;
    }

    /** A change's values by their names under {@code p.}, each name checked against a policy's settings. */
    private static void flatten(
            String policy, String name, Object value, Map<String, Object> into, List<String> problems) {
        String path = PREFIX + policy + "." + name;
        if (!ConfigurationPropertyName.isValid(name)) {
            problems.add(path + " is not a property name as YAML writes it (lower case, words joined by '-')");
            return;
        }
        String[] parts = name.replaceAll("\\[\\d+]", "").split("\\.", -1);
        if (!isSetting(parts[0])) {
            problems.add(path + " is not a setting of a policy");
            return;
        }
        if (value instanceof Map<?, ?> nested) {
            nested.forEach((key, inner) -> flatten(policy, name + "." + key, inner, into, problems));
            return;
        }
        boolean planLimit = parts.length == 4 && "limits".equals(parts[2]) && isSetting(parts[3]);
        if ("plans".equals(parts[0])
                && !planLimit
                && (parts.length != 3 || !isSetting(parts[2]) || "plans".equals(parts[2]))) {
            problems.add(path + " is not a number of a plan (plans.<plan>.<setting>)");
            return;
        }
        if (value instanceof List<?> list) {
            for (int i = 0; i < list.size(); i++) {
                if (list.get(i) instanceof Map<?, ?> limit) {
                    // one of several limits: its numbers by name
                    int index = i;
                    limit.forEach(
                            (key, inner) -> flatten(policy, name + "[" + index + "]." + key, inner, into, problems));
                } else {
                    into.put("p." + name + "[" + i + "]", list.get(i));
                }
            }
            return;
        }
        if (value == null) {
            problems.add(path + " needs a value");
            return;
        }
        into.put("p." + name, value);
    }

    private static boolean isSetting(String name) {
        return new BeanWrapperImpl(new ThrottleProperties.Policy()).isWritableProperty(PolicyFactory.camelCase(name));
    }

    private static ThrottleProperties.Policy copy(ThrottleProperties.Policy policy) {
        ThrottleProperties.Policy copy = new ThrottleProperties.Policy();
        BeanUtils.copyProperties(policy, copy);
        Map<String, ThrottleProperties.Policy> plans = new LinkedHashMap<>();
        policy.getPlans().forEach((name, plan) -> plans.put(name, copy(plan)));
        copy.setPlans(plans);
        copy.setLimits(new ArrayList<>(
                policy.getLimits().stream().map(ThrottlePolicies::copy).toList()));
        if (policy.getTimeouts() != null) {
            copy.setTimeouts(new ArrayList<>(policy.getTimeouts()));
        }
        return copy;
    }
}
