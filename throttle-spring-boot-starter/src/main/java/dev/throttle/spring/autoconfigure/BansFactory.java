package dev.throttle.spring.autoconfigure;

import dev.throttle.FixedWindowPolicy;
import dev.throttle.InvalidPolicyException;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.bans.BanRule;
import dev.throttle.spring.internal.web.BanGate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.springframework.expression.Expression;

/**
 * Reads {@code throttle.bans} once, at startup: every mistake of every ban at once, each naming its
 * property, as a {@link ThrottleConfigurationException}; the key expressions parsed here and never
 * again.
 */
final class BansFactory {

    /** A ban's name: its counter is a policy named {@code ban.<name>}, which takes at most 64 such characters. */
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_-]{1,60}");

    private BansFactory() {}

    /**
     * The configured bans and their parsed keys.
     *
     * @param rules the bans, in configuration order
     * @param keys each ban's key expression by name; null for {@code #ip}, read without SpEL
     */
    record Read(List<BanRule> rules, Map<String, @Nullable Expression> keys) {}

    static Read read(ThrottleProperties properties) {
        List<String> problems = new ArrayList<>();
        List<BanRule> rules = new ArrayList<>();
        Map<String, @Nullable Expression> keys = new HashMap<>();
        properties.getBans().forEach((name, ban) -> {
            String property = "throttle.bans." + name;
            int before = problems.size();
            if (!NAME.matcher(name).matches()) {
                problems.add(property + ": a ban's name must be 1 to 60 letters, digits, '_' or '-'");
            }
            if (properties.getPolicies().containsKey("ban." + name)) {
                problems.add(property + ": its refusals are counted under the policy name 'ban." + name
                        + "', which throttle.policies already uses: rename the ban or the policy");
            }
            if (ban.getAfter() == null) {
                problems.add(property + ".after is required: the refusals that start the ban");
            } else if (ban.getAfter() < 1) {
                problems.add(property + ".after must be at least 1, was " + ban.getAfter());
            }
            positive(problems, property + ".within", ban.getWithin(), "the window in which refusals are counted");
            positive(problems, property + ".for", ban.getFor(), "how long the ban lasts");
            if (ban.getStatus() != 429 && ban.getStatus() != 403) {
                problems.add(property + ".status must be 429 or 403, was " + ban.getStatus());
            }
            for (String policy : ban.getPolicies()) {
                if (!properties.getPolicies().containsKey(policy)) {
                    problems.add(property + ".policies names policy '" + policy + "', which is not configured "
                            + "(configured: "
                            + String.join(", ", properties.getPolicies().keySet()) + ")");
                }
            }
            Expression key = null;
            String source = (ban.getKey() != null) ? ban.getKey().trim() : "";
            if (source.isEmpty()) {
                problems.add(property + ".key must not be empty: a SpEL expression over the request, such as #ip");
            } else {
                key = BanGate.parseKey(property + ".key", source, problems);
            }
            if (problems.size() == before) {
                try {
                    // the counter's own checks (a window of whole milliseconds, a sane limit)
                    new FixedWindowPolicy("ban." + name, ban.getAfter(), ban.getWithin());
                } catch (InvalidPolicyException ex) {
                    problems.add(property + ".within or .after cannot be counted: " + ex.getMessage());
                }
            }
            if (problems.size() == before) {
                rules.add(new BanRule(
                        name,
                        ban.getAfter(),
                        ban.getWithin(),
                        new LinkedHashSet<>(ban.getPolicies()),
                        ban.getFor(),
                        ban.getStatus()));
                keys.put(name, key);
            }
        });
        if (!problems.isEmpty()) {
            throw new ThrottleConfigurationException(problems);
        }
        return new Read(List.copyOf(rules), keys);
    }

    private static void positive(List<String> problems, String property, @Nullable Duration value, String what) {
        if (value == null) {
            problems.add(property + " is required: " + what);
        } else if (value.isNegative() || value.isZero()) {
            problems.add(property + " must be positive, was " + value);
        }
    }
}
