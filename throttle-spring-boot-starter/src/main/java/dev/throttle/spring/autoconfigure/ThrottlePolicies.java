package dev.throttle.spring.autoconfigure;

import dev.throttle.Throttler;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.actuate.PolicyChanges;
import dev.throttle.spring.fleet.SharedPolicyChanges;
import dev.throttle.spring.fleet.StoredPolicyChange;
import dev.throttle.spring.internal.request.PolicyModes;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
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
 * Cloud), or the application calling {@link #update} or {@link #refresh}. On a store that a fleet
 * shares ({@link SharedPolicyChanges}: Redis), a change through {@link #update(String, Map, String)}
 * or {@link #revert} is stored with a version and reaches every instance, which applies the highest
 * version it has heard of (so that every instance ends on the same numbers), loads the stored
 * changes before it serves, and reads them all again when it was deaf for a while. Otherwise changes
 * apply to this instance only. Thread-safe: changes are applied one at a time.
 */
public final class ThrottlePolicies implements PolicyChanges {

    private static final Log logger = LogFactory.getLog(ThrottlePolicies.class);

    private static final String PREFIX = "throttle.policies.";

    /** Who made a change when nobody is named (a change made by the application itself). */
    private static final String UNKNOWN = "unknown";

    private final Throttler throttler;

    private final PolicyModes modes;

    private ThrottleProperties.Mode defaultMode;

    /** The settings in force, by policy name: copies, never the bound properties themselves. */
    private final Map<String, ThrottleProperties.Policy> settings = new LinkedHashMap<>();

    /** The settings as configured (the environment's), by policy name: what a revert goes back to. */
    private final Map<String, ThrottleProperties.Policy> configured = new LinkedHashMap<>();

    /** The fleet's change applied to each policy, by policy name; none for a policy as configured. */
    private final Map<String, StoredPolicyChange> applied = new LinkedHashMap<>();

    /** The highest version heard of per policy, applied or skipped: an older one is never applied after it. */
    private final Map<String, Long> heard = new LinkedHashMap<>();

    /** Where the fleet's changes live, or null when changes stay in this instance. */
    private @Nullable SharedPolicyChanges shared;

    ThrottlePolicies(Throttler throttler, ThrottleProperties properties, PolicyModes modes) {
        this.throttler = throttler;
        this.modes = modes;
        this.defaultMode = properties.getMode();
        properties.getPolicies().forEach((name, policy) -> {
            if (throttler.policies().containsKey(name)) {
                this.settings.put(name, copy(policy));
                this.configured.put(name, copy(policy));
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
    public void update(String policy, Map<String, ?> changes) {
        update(policy, changes, UNKNOWN);
    }

    /**
     * Changes some settings of a policy, as {@link #update(String, Map)} does, on every instance of
     * the fleet where the store is shared: the change is validated here, stored with a version, and
     * applied by every instance (this one included) when it hears of it.
     * @param policy the policy's name
     * @param changes setting to new value; nested maps for plans
     * @param by who makes the change (the actuator caller's principal), for the record
     * @throws IllegalArgumentException when no policy has that name
     * @throws ThrottleConfigurationException naming each property that is wrong; nothing changed
     */
    @Override
    public synchronized void update(String policy, Map<String, ?> changes, String by) {
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
        ThrottleProperties.Policy changed = bind(policy, copy(current), flat);
        readAtStartup(policy, current, changed);
        SharedPolicyChanges shared = this.shared;
        if (shared == null) {
            apply(Map.of(policy, changed));
            return;
        }
        // validated as a whole before it is stored: a change with a mistake reaches no instance
        check(Map.of(policy, changed));
        applyOwn(shared, shared.save(policy, delta(policy, flat), by));
    }

    /**
     * Applies a change this instance just stored, as the store now holds the policy's changes: the
     * store's newest (another instance's change may have followed this one), or this one when the
     * store gave it a version below one heard of, having lost its changes (a restart without
     * persistence): an operator's change always takes effect where it was made.
     */
    private void applyOwn(SharedPolicyChanges shared, StoredPolicyChange stored) {
        try {
            applyAllStored(shared);
        } catch (RuntimeException ex) {
            applyStored(stored);
        }
    }

    /**
     * Reverts a policy to its configuration: on every instance where the store is shared, otherwise here.
     * @param policy the policy's name
     * @param by who reverts it, for the record
     * @throws IllegalArgumentException when no policy has that name
     */
    @Override
    public synchronized void revert(String policy, String by) {
        ThrottleProperties.Policy configured = this.configured.get(policy);
        if (configured == null) {
            throw new IllegalArgumentException("No throttle policy '" + policy + "' (configured: "
                    + String.join(", ", this.settings.keySet()) + ")");
        }
        SharedPolicyChanges shared = this.shared;
        if (shared == null) {
            apply(Map.of(policy, copy(configured)));
            this.applied.remove(policy);
            return;
        }
        applyOwn(shared, shared.save(policy, null, by));
    }

    @Override
    public synchronized @Nullable StoredPolicyChange lastChange(String policy) {
        return this.applied.get(policy);
    }

    @Override
    public synchronized @Nullable Map<String, Object> configured(String policy) {
        ThrottleProperties.Policy configured = this.configured.get(policy);
        if (configured == null) {
            return null;
        }
        PolicyFactory.Planned planned = PolicyFactory.createOne(policy, configured);
        Map<String, Object> numbers =
                new LinkedHashMap<>(planned.policy().algorithm().settings(planned.policy()));
        if (!planned.plans().isEmpty()) {
            Map<String, Object> plans = new LinkedHashMap<>();
            planned.plans().forEach((plan, numbered) -> {
                Map<String, Object> settings =
                        new LinkedHashMap<>(numbered.algorithm().settings(numbered));
                plans.put(plan, settings);
            });
            numbers.put("plans", plans);
        }
        return numbers;
    }

    /**
     * Shares this instance's policy changes with the fleet through {@code shared}: reads the changes
     * stored so far and applies them now (before the application serves), then hears every later
     * one. A store that cannot be read now is read again when it is reached.
     * @param shared where the fleet's changes live
     */
    public void shareThrough(SharedPolicyChanges shared) {
        synchronized (this) {
            this.shared = shared;
        }
        try {
            applyAllStored(shared);
        } catch (RuntimeException ex) {
            // the store's own outage is the one WARN for a Redis that is down at startup
            logger.info("Could not read the fleet's policy changes (" + ex.getMessage() + "); this instance applies "
                    + "them once the store answers");
        }
        shared.listen(new SharedPolicyChanges.Listener() {
            @Override
            public void changed(String policy) {
                applyAllStored(shared);
            }

            @Override
            public void reconnected() {
                applyAllStored(shared);
            }
        });
    }

    private void applyAllStored(SharedPolicyChanges shared) {
        reconcile(shared.loadAll());
    }

    /**
     * Applies the changes the store holds now. A store that holds an older change of a policy than
     * one heard of, or none, lost its changes (a restart without persistence, a failover that lost
     * the last writes) and counts versions from 1 again: it is taken as it is, as every instance that
     * starts now takes it, rather than every later change being skipped as older than one heard of.
     */
    private synchronized void reconcile(List<StoredPolicyChange> stored) {
        Set<String> held = new HashSet<>();
        for (StoredPolicyChange change : stored) {
            String policy = change.policy();
            held.add(policy);
            Long heard = this.heard.get(policy);
            if (heard != null && heard > change.version()) {
                logger.warn("The store holds change " + change.version() + " of policy '" + policy + "', older than"
                        + " change " + heard + " heard of: it lost the changes after it; its own is applied,"
                        + " as on every instance that reads it");
                this.heard.remove(policy);
            }
            applyStored(change);
        }
        for (String policy : new ArrayList<>(this.heard.keySet())) {
            if (held.contains(policy)) {
                continue;
            }
            this.heard.remove(policy);
            if (this.applied.remove(policy) != null && this.configured.containsKey(policy)) {
                logger.warn("The store holds no change of policy '" + policy + "' any more (it lost its changes):"
                        + " back to its configuration, as on every instance that reads it");
                try {
                    apply(Map.of(policy, copy(this.configured.get(policy))));
                } catch (RuntimeException ex) {
                    logger.warn("Policy '" + policy + "' could not go back to its configuration: " + ex.getMessage());
                }
            }
        }
    }

    /**
     * Applies a change of the fleet unless one as new or newer was heard of: a change that this
     * instance cannot apply (a policy or a setting it does not know, during a rolling deploy) is
     * logged and skipped, never thrown.
     */
    synchronized void applyStored(StoredPolicyChange change) {
        String policy = change.policy();
        Long heard = this.heard.get(policy);
        if (heard != null && heard >= change.version()) {
            return;
        }
        this.heard.put(policy, change.version());
        ThrottleProperties.Policy configured = this.configured.get(policy);
        String what = "Change " + change.version() + " of policy '" + policy + "' (by " + change.by() + " at "
                + change.at() + ")";
        if (configured == null) {
            logger.warn(what + " names a policy this instance does not have; skipped");
            return;
        }
        try {
            ThrottleProperties.Policy target;
            if (change.isRevert()) {
                target = copy(configured);
            } else {
                Map<String, Object> flat = new LinkedHashMap<>();
                change.settings().forEach((name, value) -> flat.put("p." + name, value));
                target = bind(policy, copy(configured), flat);
            }
            apply(Map.of(policy, target));
        } catch (ThrottleConfigurationException ex) {
            logger.warn(what + " cannot apply on this instance, skipped: " + String.join("; ", ex.problems()));
            return;
        } catch (RuntimeException ex) {
            logger.warn(what + " cannot apply on this instance, skipped: " + ex.getMessage());
            return;
        }
        if (change.isRevert()) {
            this.applied.remove(policy);
            logger.info(what + " reverted it to its configuration");
        } else {
            this.applied.put(policy, change);
            logger.info(what + " applied: " + change.settings());
        }
    }

    /**
     * The settings that differ from the configuration after a change: those of the change applied
     * before, with the ones this change names replacing theirs (a list or a plan it names as a whole).
     */
    private Map<String, String> delta(String policy, Map<String, Object> flat) {
        Map<String, String> delta = new LinkedHashMap<>();
        StoredPolicyChange before = this.applied.get(policy);
        if (before != null && before.settings() != null) {
            delta.putAll(before.settings());
        }
        flat.keySet()
                .forEach((name) -> delta.keySet().removeIf((old) -> group(old).equals(group(name.substring(2)))));
        flat.forEach((name, value) -> delta.put(name.substring(2), String.valueOf(value)));
        return delta;
    }

    /** What a setting belongs to as a whole: a plan ({@code plans.pro}), a list ({@code timeouts}), or itself. */
    private static String group(String name) {
        String[] parts = name.split("\\.", -1);
        if ("plans".equals(parts[0]) && parts.length > 1) {
            return "plans." + parts[1].replaceAll("\\[\\d+]", "");
        }
        return parts[0].replaceAll("\\[\\d+]", "");
    }

    /** Binds flattened settings ({@code p.<name>}) onto a copy of a policy's settings. */
    private static ThrottleProperties.Policy bind(
            String policy, ThrottleProperties.Policy changed, Map<String, Object> flat) {
        Map<String, ThrottleProperties.Policy> plansBefore = new LinkedHashMap<>(changed.getPlans());
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
        // the binder puts a plan it binds into the map anew: its settings not named keep their values
        changed.getPlans().forEach((name, plan) -> {
            ThrottleProperties.Policy before = plansBefore.get(name);
            if (before != null && before != plan) {
                keepUnnamed(before, plan);
            }
        });
        return changed;
    }

    /** Copies onto a plan bound anew every setting it was not given, from the plan as it was. */
    private static void keepUnnamed(ThrottleProperties.Policy before, ThrottleProperties.Policy bound) {
        BeanWrapperImpl from = new BeanWrapperImpl(before);
        BeanWrapperImpl to = new BeanWrapperImpl(bound);
        for (java.beans.PropertyDescriptor property : from.getPropertyDescriptors()) {
            String name = property.getName();
            if (!from.isReadableProperty(name)
                    || !to.isWritableProperty(name)
                    || property.getPropertyType().isPrimitive()) {
                continue;
            }
            Object given = to.getPropertyValue(name);
            Object kept = from.getPropertyValue(name);
            boolean unnamed = (given == null)
                    || (given instanceof java.util.Collection<?> list && list.isEmpty())
                    || (given instanceof Map<?, ?> map && map.isEmpty());
            if (unnamed && kept != null) {
                to.setPropertyValue(name, kept);
            }
        }
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
                    StoredPolicyChange change = this.applied.get(name);
                    if (change != null && change.settings() != null) {
                        // the fleet's change still applies, now on top of the new configuration
                        Map<String, Object> flat = new LinkedHashMap<>();
                        change.settings().forEach((setting, value) -> flat.put("p." + setting, value));
                        known.put(name, bind(name, copy(settings), flat));
                    } else {
                        known.put(name, settings);
                    }
                } else {
                    logger.warn("Policy '" + name + "' was added to the environment; a restart applies it");
                }
            });
            apply(known);
            bound.getPolicies().forEach((name, settings) -> {
                if (this.configured.containsKey(name)) {
                    this.configured.put(name, copy(settings));
                }
            });
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

    /** Validates every policy given, as {@link #apply} does, and applies none. */
    private void check(Map<String, ThrottleProperties.Policy> policies) {
        built(policies);
    }

    /** Validates every policy given, then applies those whose settings changed; none when one has a mistake. */
    private void apply(Map<String, ThrottleProperties.Policy> policies) {
        Map<String, PolicyFactory.Planned> built = built(policies);
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

    /** Builds every policy given, naming every mistake; throws before anything is applied. */
    private Map<String, PolicyFactory.Planned> built(Map<String, ThrottleProperties.Policy> policies) {
        List<String> problems = new ArrayList<>();
        Map<String, PolicyFactory.Planned> built = new LinkedHashMap<>();
        policies.forEach((name, changed) -> {
            ThrottleProperties.Policy current = this.settings.get(name);
            if (!algorithmName(changed).equals(algorithmName(current))) {
                // said first and alone: the new algorithm's parameters are no matter when it cannot apply
                problems.add(algorithmCannotChange(name));
                return;
            }
            try {
                PolicyFactory.Planned planned = PolicyFactory.createOne(name, changed);
                if (!planned.policy()
                        .algorithm()
                        .equals(this.throttler.policy(name).algorithm())) {
                    problems.add(algorithmCannotChange(name));
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
        return built;
    }

    /**
     * Refuses a change of the settings that are read once, when the application starts (a call's
     * wait and debt bound, what the store does when it fails, its near cache and durability): taken
     * at run time, they would answer 200 and change nothing.
     */
    private static void readAtStartup(
            String policy, ThrottleProperties.Policy current, ThrottleProperties.Policy changed) {
        List<String> problems = new ArrayList<>();
        startupOnly(problems, policy, "wait", current.getWait(), changed.getWait());
        startupOnly(problems, policy, "max-debt", current.getMaxDebt(), changed.getMaxDebt());
        startupOnly(problems, policy, "failure-mode", current.getFailureMode(), changed.getFailureMode());
        startupOnly(problems, policy, "near-cache", current.getNearCache(), changed.getNearCache());
        startupOnly(problems, policy, "durability", current.getDurability(), changed.getDurability());
        if (!problems.isEmpty()) {
            throw new ThrottleConfigurationException(problems);
        }
    }

    private static void startupOnly(
            List<String> problems, String policy, String setting, @Nullable Object current, @Nullable Object changed) {
        if (!Objects.equals(current, changed)) {
            problems.add(PREFIX + policy + "." + setting + " is read when the application starts and cannot change"
                    + " at run time; restart to change it");
        }
    }

    private String algorithmCannotChange(String name) {
        return PREFIX + name + ".algorithm cannot change at run time ("
                + this.throttler.policy(name).algorithm()
                + "): its keys' state would mean nothing under another; restart to change it";
    }

    private static String algorithmName(ThrottleProperties.Policy settings) {
        return (settings.getAlgorithm() != null)
                ? settings.getAlgorithm().trim().toLowerCase(Locale.ROOT)
                : "";
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
        String setting = parts[parts.length - 1];
        if (value instanceof List<?> list) {
            for (int i = 0; i < list.size(); i++) {
                String bare = BareDurations.isDuration(setting)
                        ? BareDurations.problem(path + "[" + i + "]", list.get(i))
                        : null;
                if (bare != null) {
                    problems.add(bare);
                } else if (list.get(i) instanceof Map<?, ?> limit) {
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
        String bare = BareDurations.isDuration(setting) ? BareDurations.problem(path, value) : null;
        if (bare != null) {
            problems.add(bare);
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
