package dev.throttle;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A throttling algorithm: everything the library knows about it, in one place. Each algorithm is
 * one policy record with its {@code Algorithm} nested in it ({@link TokenBucketPolicy#ALGORITHM},
 * {@link GcraPolicy#ALGORITHM}, ...), and owns:
 * <ul>
 * <li>its name in configuration ({@link #id()}) and its parameters by their configuration names
 * ({@link #parameters()}), with their defaults and checks ({@link #create(String, Map)});</li>
 * <li>what the actuator lists as a policy's settings ({@link #settings(Policy)});</li>
 * <li>its transition in Java ({@link #transitionOf(Policy, Rates)}), which a store that keeps
 * state in this process runs over the state it keeps;</li>
 * <li>its numbers as integers ({@link #numbersOf(Policy)}), which a store that runs its own twin
 * of the transition elsewhere (the Redis store, in Lua) is given.</li>
 * </ul>
 * What a policy advertises in {@code RateLimit-Policy} is on {@link Policy} itself. An algorithm
 * names no store: each store maps an algorithm to its own representation (the Redis store, an
 * algorithm's name to its script).
 *
 * <p>This is also the SPI for adding an algorithm, which takes: one policy record with its
 * {@code Algorithm} subclass (public, with a public no-argument constructor) and its transition
 * nested in it; one line naming that subclass in {@code META-INF/services/dev.throttle.Algorithm},
 * so that {@link #fromId(String)} finds it; its twin in each store that runs transitions of its
 * own (the Redis store's script); and its traces in the store contract suite. Algorithms are
 * stateless: two instances of one class are equal. Thread-safe.
 *
 * @param <P> the algorithm's policy type
 */
public abstract class Algorithm<P extends Policy> {

    private final String id;

    private final Class<P> type;

    private final List<String> parameters;

    /**
     * Creates an algorithm.
     * @param id its name in configuration, for example {@code token-bucket}
     * @param type its policy type
     * @param parameters its parameters by their configuration names, for example {@code capacity}
     */
    protected Algorithm(String id, Class<P> type, String... parameters) {
        this.id = id;
        this.type = type;
        this.parameters = List.of(parameters);
    }

    /**
     * Builds a policy from its settings; missing ones take the algorithm's defaults.
     * @param name the policy's name
     * @param settings the settings, by configuration name
     * @return the policy
     * @throws InvalidPolicyException naming the parameter that is missing or invalid
     */
    protected abstract P build(String name, Settings settings);

    /**
     * Returns a policy's settings, one per {@link #parameters() parameter} and in their order; null
     * for one the policy leaves to its default, which {@link #settings(Policy)} leaves out.
     * @param policy the policy
     * @return its settings, as {@link #build} takes them
     */
    protected abstract List<Object> values(P policy);

    /**
     * Returns a policy's numbers as integers, in the order each store's twin of the transition reads
     * them (the Redis store's script as {@code P[1]}, {@code P[2]}, ...).
     * @param policy the policy
     * @return integers below 2^53, so that Lua's doubles hold them exactly
     */
    protected abstract long[] numbers(P policy);

    /**
     * Returns a policy's transition in Java.
     * @param policy the policy (of one limit)
     * @param rates the numbers the policy name's states were written under (see {@link Rates})
     * @return its transition
     */
    protected abstract Transition transition(P policy, Rates rates);

    /**
     * Returns whether a policy of this algorithm may have several limits ({@link MultiLimitPolicy}).
     * @return false unless the algorithm's transition is a {@link PackedTransition} (and its twins
     * read its numbers from {@code P} alone)
     */
    public boolean takesSeveralLimits() {
        return false;
    }

    /**
     * Returns whether a call of this algorithm may wait for its turn (a policy's {@code wait}): the
     * store then reserves a later turn in one round trip ({@link Limiter#reserve}) instead of refusing.
     * An algorithm that takes a wait overrides its transition's {@link PackedTransition#reserve} and
     * {@link PackedTransition#reserved}, and its twins in other stores reserve alike; the
     * {@code concurrency} algorithm, whose turn no store can know up front (a slot frees when another
     * call ends), takes a wait by waiting for a release instead ({@link #waitsForARelease()}).
     * @return false unless the algorithm says so; see {@link #whyNoWait()}
     */
    public boolean takesWait() {
        return false;
    }

    /**
     * Whether a call that waits takes its turn when a key is given back rather than by a reservation:
     * {@link BoundPolicy} then waits for a release of the key ({@link SlotWaits}) and never asks the
     * store to reserve.
     * @return false unless the algorithm is {@code concurrency}
     */
    boolean waitsForARelease() {
        return false;
    }

    /**
     * Returns why a policy of this algorithm takes no {@code wait}, for the startup error that refuses
     * one: an algorithm whose waits are its protection overrides it to say so.
     * @return the reason, as the end of a sentence
     */
    public String whyNoWait() {
        return "the " + this.id + " algorithm cannot reserve a later turn for a call";
    }

    /**
     * Whether its transition can take a cost known only after the call ({@link PackedTransition#charge}),
     * carrying a debt: {@code token-bucket}, {@code gcra} and {@code fixed-window}.
     * @return false unless the algorithm says so; see {@link #whyNoActualCost()}
     */
    public boolean takesActualCost() {
        return false;
    }

    /**
     * Returns why a policy of this algorithm takes no cost known after the call, for the startup
     * error that refuses one.
     * @return the reason, as the end of a sentence
     */
    public String whyNoActualCost() {
        return "the " + this.id + " algorithm cannot carry a debt (only token-bucket, gcra and fixed-window can)";
    }

    /**
     * Returns the name used in configuration.
     * @return for example {@code token-bucket}
     */
    public final String id() {
        return this.id;
    }

    /**
     * Returns the parameters the algorithm takes, by their configuration names.
     * @return for example {@code capacity, refill-tokens, refill-period}
     */
    public final List<String> parameters() {
        return this.parameters;
    }

    /**
     * Builds a policy from settings by configuration name, such as a {@code throttle.policies}
     * entry holds. Settings left out, or null, take the algorithm's defaults.
     * @param name the policy's name
     * @param settings the settings, for example {@code capacity -> 10}
     * @return the policy
     * @throws InvalidPolicyException naming the parameter that is missing, invalid, or not one of
     * this algorithm's
     */
    public final P create(String name, Map<String, ?> settings) {
        for (String parameter : settings.keySet()) {
            if (!this.parameters.contains(parameter) && settings.get(parameter) != null) {
                throw new InvalidPolicyException(
                        name,
                        parameter,
                        "means nothing to the " + this.id + " algorithm, which takes "
                                + String.join(", ", this.parameters));
            }
        }
        return build(name, new Settings(name, settings));
    }

    /**
     * Returns a policy's settings by configuration name, in the order of {@link #parameters()}:
     * what {@link #create} would take to build an equal policy.
     * @param policy a policy of this algorithm
     * @return its settings, for example {@code capacity -> 10, refill-tokens -> 1, refill-period -> PT1S}
     */
    public final Map<String, Object> settings(Policy policy) {
        if (policy.severalLimits()) {
            return Map.of("limits", policy.limits().stream().map(this::settings).toList());
        }
        List<Object> values = values(this.type.cast(policy));
        Map<String, Object> settings = new LinkedHashMap<>();
        for (int i = 0; i < this.parameters.size(); i++) {
            // a setting left to its default (null) is left out, as create() takes it
            if (values.get(i) != null) {
                settings.put(this.parameters.get(i), values.get(i));
            }
        }
        return settings;
    }

    /**
     * Returns the numbers a policy's twins of the transition in other stores are given (the Redis
     * store's script, as {@code local P = {...}}).
     * @param policy a policy of this algorithm (of one limit)
     * @return the numbers, as each script's header documents them
     */
    public final long[] numbersOf(Policy policy) {
        return numbers(this.type.cast(policy));
    }

    /**
     * Returns a policy's transition in Java, for a store to run over the state it keeps. A policy
     * with several limits gets one {@link ArrayTransition} over one packed state per limit, each
     * limit decided by its own transition and all charged in one write. Called when a store binds a
     * policy, never per decision.
     * @param policy a policy of this algorithm
     * @param rates the numbers the policy name's states were written under: one table per policy
     * name, the same for every binding of that name
     * @return the transition
     */
    public final Transition transitionOf(Policy policy, Rates rates) {
        if (!policy.severalLimits()) {
            return transition(this.type.cast(policy), rates);
        }
        List<? extends Policy> limits = policy.limits();
        PackedTransition[] transitions = new PackedTransition[limits.size()];
        for (int i = 0; i < transitions.length; i++) {
            transitions[i] = (PackedTransition) transition(this.type.cast(limits.get(i)), rates);
        }
        return new SeveralTransition(transitions);
    }

    /**
     * Finds an algorithm by its configuration name (case-insensitive; {@code _} and {@code -} alike).
     * @param name for example {@code token-bucket}
     * @return the algorithm
     * @throws IllegalArgumentException naming the known algorithms when none matches
     */
    public static Algorithm<?> fromId(String name) {
        return AlgorithmRegistry.find(name);
    }

    /**
     * Returns every algorithm on the class path, in the order their service files list them.
     * @return the algorithms
     */
    public static List<Algorithm<?>> all() {
        return AlgorithmRegistry.ALL;
    }

    /**
     * Returns the names of every algorithm, for messages.
     * @return for example {@code token-bucket, gcra, fixed-window, sliding-log, lockout}
     */
    public static String ids() {
        return AlgorithmRegistry.ids();
    }

    @Override
    public final boolean equals(Object obj) {
        return obj != null && obj.getClass() == getClass();
    }

    @Override
    public final int hashCode() {
        return this.id.hashCode();
    }

    @Override
    public final String toString() {
        return this.id;
    }

    /**
     * A policy's settings by configuration name, read with the algorithm's defaults. Values have
     * the types the policy records use: {@code Integer}, {@code Double}, {@code Duration} and
     * {@code List<Duration>}.
     */
    public static final class Settings {

        private final String policy;

        private final Map<String, ?> values;

        Settings(String policy, Map<String, ?> values) {
            this.policy = policy;
            this.values = values;
        }

        /**
         * Returns a setting, or null when it is not set.
         * @param <T> its type
         * @param parameter its configuration name
         * @param type its type
         * @return the value, or null
         * @throws InvalidPolicyException when the value has another type
         */
        public <T> T get(String parameter, Class<T> type) {
            Object value = this.values.get(parameter);
            if (value != null && !type.isInstance(value)) {
                throw new InvalidPolicyException(
                        this.policy, parameter, "must be of type " + type.getSimpleName() + ", was " + value);
            }
            return type.cast(value);
        }

        /**
         * Returns a setting, or the algorithm's default when it is not set.
         * @param <T> its type
         * @param parameter its configuration name
         * @param type its type
         * @param fallback the default
         * @return the value or the default
         */
        public <T> T get(String parameter, Class<T> type, T fallback) {
            T value = get(parameter, type);
            return (value != null) ? value : fallback;
        }

        /**
         * Returns a setting that has no default.
         * @param <T> its type
         * @param parameter its configuration name
         * @param type its type
         * @return the value
         * @throws InvalidPolicyException when it is not set
         */
        public <T> T required(String parameter, Class<T> type) {
            T value = get(parameter, type);
            if (value == null) {
                throw new InvalidPolicyException(this.policy, parameter, "is required");
            }
            return value;
        }
    }
}
