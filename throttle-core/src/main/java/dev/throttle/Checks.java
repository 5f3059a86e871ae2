package dev.throttle;

import java.time.Duration;
import java.util.regex.Pattern;

/**
 * Validation shared by the policy records. Limits keep every stored number exact both in a
 * Java {@code long} and in a Lua double (below 2^53), so the two stores always agree.
 */
final class Checks {

    /** Largest count, capacity or threshold: counts are packed into 23 bits ({@link PackedTransition#pack}). */
    static final int MAX_QUANTITY = (1 << 23) - 1;

    /** Longest duration any policy may use (about ten years), so no time arithmetic overflows. */
    static final long MAX_MILLIS = Duration.ofDays(3650).toMillis();

    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,64}");

    private Checks() {}

    static String name(String name) {
        if (name == null || !NAME.matcher(name).matches()) {
            throw new IllegalArgumentException(
                    "policy name must be 1 to 64 letters, digits, '.', '_' or '-', was '" + name + "'");
        }
        return name;
    }

    static int quantity(String policy, String parameter, int value) {
        if (value < 1 || value > MAX_QUANTITY) {
            throw new InvalidPolicyException(
                    policy, parameter, "must be between 1 and " + MAX_QUANTITY + ", was " + value);
        }
        return value;
    }

    static Duration duration(String policy, String parameter, Duration value) {
        if (value == null) {
            throw new InvalidPolicyException(policy, parameter, "is required");
        }
        if (value.isNegative() || value.isZero()) {
            throw new InvalidPolicyException(policy, parameter, "must be positive, was " + format(value));
        }
        if (value.compareTo(Duration.ofMillis(MAX_MILLIS)) > 0) {
            throw new InvalidPolicyException(policy, parameter, "must be at most 3650d, was " + format(value));
        }
        if (value.getNano() % 1_000_000 != 0) {
            throw new InvalidPolicyException(
                    policy, parameter, "must be a whole number of milliseconds, was " + format(value));
        }
        return value;
    }

    static String format(Duration duration) {
        if (duration.getNano() % 1_000_000 != 0
                || duration.compareTo(Duration.ofMillis(MAX_MILLIS)) > 0
                || duration.isNegative()
                || duration.isZero()) {
            return duration.toString();
        }
        long millis = duration.toMillis();
        if (millis % 1000 != 0) {
            return millis + "ms";
        }
        return (millis / 1000) + "s";
    }
}
