package dev.throttle.spring.web;

import dev.throttle.Decision;
import dev.throttle.Policy;
import dev.throttle.spring.admission.PolicyDecision;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Formats the {@code RateLimit-Policy} and {@code RateLimit} fields of
 * draft-ietf-httpapi-ratelimit-headers-10: {@code "login";q=5;w=900} and
 * {@code "login";r=0;t=8}. Items are named by policy, never by key, so no e-mail address or
 * IP address leaves in a header.
 *
 * <p>{@code t} is what the draft says it is, "the number of seconds until additional quota ... is
 * made available": the decision's {@link Decision#nextUnitAfterSeconds() time until its next unit},
 * whatever the algorithm, never the time until the key's state is neutral (a lockout refused for a
 * second says {@code t=1}, not the hour its state lasts); 0 when nothing is in use. A refusal's
 * {@code t} is its own wait, so {@code Retry-After} is never earlier; and a client that waits
 * {@code t} whenever {@code r=0} is never refused by that policy.
 */
public final class RateLimitHeaders {

    /** The policy field's name. */
    public static final String POLICY = "RateLimit-Policy";

    /** The limit field's name. */
    public static final String LIMIT = "RateLimit";

    /**
     * A policy's item never changes, and every allowed response carries it: formatted once per
     * policy (policies are values and come from configuration, so this stays small; past the bound
     * items are formatted per call rather than kept).
     */
    private static final Map<Policy, String> POLICY_ITEMS = new ConcurrentHashMap<>();

    private static final int MAX_CACHED_POLICY_ITEMS = 1024;

    private RateLimitHeaders() {}

    /**
     * Formats the {@code RateLimit-Policy} value for some decisions.
     * @param decisions the decisions
     * @return a list of policy items
     */
    public static String policy(List<PolicyDecision> decisions) {
        if (decisions.size() == 1) {
            return policyItem(decisions.get(0).policy());
        }
        StringBuilder value = new StringBuilder(32 * decisions.size());
        for (int i = 0; i < decisions.size(); i++) {
            if (i > 0) {
                value.append(", ");
            }
            value.append(policyItem(decisions.get(i).policy()));
        }
        return value.toString();
    }

    /**
     * Formats the {@code RateLimit} value for some decisions.
     * @param decisions the decisions
     * @return a list of limit items
     */
    public static String limit(List<PolicyDecision> decisions) {
        StringBuilder value = new StringBuilder(32 * decisions.size());
        for (int i = 0; i < decisions.size(); i++) {
            if (i > 0) {
                value.append(", ");
            }
            PolicyDecision item = decisions.get(i);
            appendLimitItem(value, item.policy(), item.decision());
        }
        return value.toString();
    }

    static String policyItem(Policy policy) {
        String item = POLICY_ITEMS.get(policy);
        if (item == null) {
            item = formatPolicyItem(policy);
            if (POLICY_ITEMS.size() < MAX_CACHED_POLICY_ITEMS) {
                POLICY_ITEMS.putIfAbsent(policy, item);
            }
        }
        return item;
    }

    private static String formatPolicyItem(Policy policy) {
        if (!policy.severalLimits()) {
            if (policy.window().isZero()) {
                // calls in progress (a concurrency limit): slots, granted per no window
                return "\"" + policy.name() + "\";q=" + policy.quota();
            }
            return "\"" + policy.name() + "\";q=" + policy.quota() + ";w="
                    + Math.max(1, ceilSeconds(policy.window().toMillis()));
        }
        // several limits: one item each, "search/1", "search/2" (names a policy cannot have, so never another's)
        StringBuilder items = new StringBuilder();
        for (int i = 0; i < policy.limits().size(); i++) {
            Policy limit = policy.limits().get(i);
            items.append((i > 0) ? ", \"" : "\"")
                    .append(policy.name())
                    .append('/')
                    .append(i + 1)
                    .append("\";q=")
                    .append(limit.quota())
                    .append(";w=")
                    .append(Math.max(1, ceilSeconds(limit.window().toMillis())));
        }
        return items.toString();
    }

    private static StringBuilder appendLimitItem(StringBuilder value, Policy policy, Decision decision) {
        if (policy.severalLimits()) {
            for (int i = 0; i < decision.limitCount(); i++) {
                Decision limit = decision.limit(i);
                value.append((i > 0) ? ", \"" : "\"")
                        .append(policy.name())
                        .append('/')
                        .append(i + 1)
                        .append("\";r=")
                        .append(limit.remaining())
                        .append(";t=")
                        .append(limit.nextUnitAfterSeconds());
            }
            return value;
        }
        return value.append('"')
                .append(policy.name())
                .append("\";r=")
                .append(decision.remaining())
                .append(";t=")
                .append(decision.nextUnitAfterSeconds());
    }

    private static long ceilSeconds(long millis) {
        return (millis + 999) / 1000;
    }
}
