package dev.throttle;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.ServiceLoader;

/**
 * The algorithms of every {@code META-INF/services/dev.throttle.Algorithm} file, found when first
 * asked for, not when {@link Algorithm} is initialized (the policy records' algorithms are created
 * then, and the service loader creates them again).
 */
final class AlgorithmRegistry {

    /** Every algorithm, in the order their service files list them. */
    static final List<Algorithm<?>> ALL = load();

    private AlgorithmRegistry() {}

    /** See {@link Algorithm#fromId(String)}. */
    static Algorithm<?> find(String name) {
        String wanted = name.trim().toLowerCase(Locale.ROOT).replace('_', '-');
        for (Algorithm<?> algorithm : ALL) {
            if (algorithm.id().equals(wanted)) {
                return algorithm;
            }
        }
        throw new IllegalArgumentException("unknown algorithm '" + name + "'; expected one of " + ids());
    }

    /** See {@link Algorithm#ids()}. */
    static String ids() {
        return String.join(", ", ALL.stream().map(Algorithm::id).toList());
    }

    private static List<Algorithm<?>> load() {
        List<Algorithm<?>> algorithms = new ArrayList<>();
        @SuppressWarnings("rawtypes")
        ServiceLoader<Algorithm> loader = ServiceLoader.load(Algorithm.class, Algorithm.class.getClassLoader());
        for (Algorithm<?> algorithm : loader) {
            for (Algorithm<?> known : algorithms) {
                if (known.id().equals(algorithm.id())) {
                    throw new IllegalStateException("two algorithms named '" + algorithm.id() + "': "
                            + known.getClass().getName() + " and "
                            + algorithm.getClass().getName());
                }
            }
            algorithms.add(algorithm);
        }
        return List.copyOf(algorithms);
    }
}
