package dev.throttle.spring.autoconfigure;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.core.env.Environment;

/**
 * Durations of the throttle's settings written as a bare number. Spring Boot reads {@code
 * refill-period: 60} as 60 milliseconds, so a bucket meant to refill once a minute refills a thousand
 * times as often and the limit means nothing, without a word. A bare number other than 0 is a
 * mistake the start reports, naming the property and the units to write.
 */
final class BareDurations {

    /**
     * The settings under {@code throttle.} that are durations, as YAML writes them, by their uniform
     * form: an environment variable spells {@code refill-period} as {@code REFILLPERIOD}, and Spring Boot
     * binds both to the one setting.
     */
    private static final Map<String, String> DURATIONS = Stream.of(
                    "refill-period",
                    "period",
                    "window",
                    "ttl",
                    "initial-delay",
                    "timeouts",
                    "expire-after",
                    "lease",
                    "wait",
                    "timeout",
                    "purge-interval",
                    "minimum-retry-after",
                    "within",
                    "for")
            .collect(Collectors.toUnmodifiableMap(BareDurations::uniform, Function.identity()));

    private static final Pattern NUMBER = Pattern.compile("[+-]?\\d+");

    private static final ConfigurationPropertyName THROTTLE = ConfigurationPropertyName.of("throttle");

    private BareDurations() {}

    /**
     * Whether a setting of that name is a duration.
     * @param setting a setting's name, as YAML writes it
     * @return whether it is read as a duration
     */
    static boolean isDuration(String setting) {
        return DURATIONS.containsKey(uniform(setting));
    }

    /** A setting's name without dashes, underscores or case, as Spring Boot compares names. */
    private static String uniform(String setting) {
        return setting.replace("-", "").replace("_", "").toLowerCase(Locale.ROOT);
    }

    /**
     * The problem with a duration's value, if it is a bare number other than 0.
     * @param property the property's name, for the message
     * @param value its value as written
     * @return the problem, or null
     */
    static @Nullable String problem(String property, @Nullable Object value) {
        if (value == null) {
            return null;
        }
        for (String part : value.toString().split(",")) {
            String number = part.strip();
            // any digit but 0: zero is zero in every unit
            if (NUMBER.matcher(number).matches() && number.chars().anyMatch((c) -> c >= '1' && c <= '9')) {
                return property + " is " + value + ", a number without a unit, which Spring Boot reads as " + number
                        + " milliseconds: write the unit (" + number + "s, " + number + "m or " + number
                        + "ms if milliseconds are meant)";
            }
        }
        return null;
    }

    /**
     * The problems of every duration under {@code throttle.} in an environment.
     * @param environment the environment, or null
     * @return one problem per property written as a bare number
     */
    static List<String> problems(@Nullable Environment environment) {
        List<String> problems = new ArrayList<>();
        if (environment == null) {
            return problems;
        }
        // the names any source gives, each then read as the binder reads it: the value that wins, so
        // that a bare number a later source overrides (a profile, the command line) is no mistake
        Set<ConfigurationPropertyName> names = new LinkedHashSet<>();
        for (ConfigurationPropertySource source : ConfigurationPropertySources.get(environment)) {
            if (source instanceof IterableConfigurationPropertySource iterable) {
                iterable.filter(THROTTLE::isAncestorOf).stream()
                        .filter((name) -> isDuration(setting(name)))
                        .forEach(names::add);
            }
        }
        Binder binder = Binder.get(environment);
        for (ConfigurationPropertyName name : names) {
            String value = binder.bind(name, Bindable.of(String.class)).orElse(null);
            String problem = problem(displayed(name), value);
            if (problem != null) {
                problems.add(problem);
            }
        }
        return problems;
    }

    /** A property's setting: its last element, or the one before an index ({@code timeouts[0]}). */
    private static String setting(ConfigurationPropertyName name) {
        return name.getElement(settingAt(name), ConfigurationPropertyName.Form.DASHED);
    }

    private static int settingAt(ConfigurationPropertyName name) {
        int last = name.getNumberOfElements() - 1;
        while (last > 0 && name.isNumericIndex(last)) {
            last--;
        }
        return last;
    }

    /**
     * A property's name as the documentation writes it: the setting of an environment variable
     * ({@code THROTTLE_POLICIES_API_REFILLPERIOD}) named {@code refill-period}, not {@code refillperiod}.
     */
    private static String displayed(ConfigurationPropertyName name) {
        int at = settingAt(name);
        String written = name.getElement(at, ConfigurationPropertyName.Form.DASHED);
        String documented = DURATIONS.get(uniform(written));
        if (documented == null || documented.equals(written)) {
            return name.toString();
        }
        StringBuilder displayed = new StringBuilder();
        for (int i = 0; i < name.getNumberOfElements(); i++) {
            if (name.isNumericIndex(i)) {
                displayed
                        .append('[')
                        .append(name.getElement(i, ConfigurationPropertyName.Form.ORIGINAL))
                        .append(']');
            } else {
                displayed
                        .append((i > 0) ? "." : "")
                        .append((i == at) ? documented : name.getElement(i, ConfigurationPropertyName.Form.DASHED));
            }
        }
        return displayed.toString();
    }
}
