package dev.throttle.spring.internal.web;

import dev.throttle.BoundPolicy;
import dev.throttle.Policy;
import dev.throttle.Throttler;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.admission.Charge;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.springframework.expression.Expression;
import org.springframework.http.server.PathContainer;
import org.springframework.web.util.pattern.PathPattern;
import org.springframework.web.util.pattern.PathPatternParser;
import org.springframework.web.util.pattern.PatternParseException;

/**
 * The URL rules of {@code throttle.http.rules}, parsed and checked at startup: every mistake (an
 * unknown policy, a path that is no pattern, a key, plan or cost that does not parse or names a
 * variable that does not exist, a cost the policy can never grant) is reported at once, each naming its property ({@code throttle.http.rules[1].key}).
 * Paths are Spring {@link PathPattern}s, matched regardless of case against every spelling of the
 * request's path (see {@link RulePaths}). Immutable and thread-safe.
 */
public final class HttpRules {

    /** The methods a rule may name: HTTP's own, PATCH, WebDAV's and QUERY. */
    private static final Set<String> METHODS = new LinkedHashSet<>(List.of(
            "GET",
            "HEAD",
            "POST",
            "PUT",
            "PATCH",
            "DELETE",
            "OPTIONS",
            "TRACE",
            "QUERY",
            "PROPFIND",
            "PROPPATCH",
            "MKCOL",
            "COPY",
            "MOVE",
            "LOCK",
            "UNLOCK",
            "REPORT",
            "SEARCH"));

    private final List<HttpRule> rules;

    private final boolean usePrincipal;

    /**
     * One rule as configured.
     *
     * @param paths path patterns ({@code /api/reports/**})
     * @param methods HTTP methods, or empty for every method
     * @param policy the policy's name
     * @param key SpEL over the request, or blank for one bucket shared by every request
     * @param cost units per request (a whole number), or SpEL over the request giving them, or blank for 1
     * @param plan SpEL over the request naming the plan whose numbers apply, or blank for the base numbers
     * @param actualCostHeader the response header that says what the request cost, or blank when its
     * cost is known before
     */
    public record Spec(
            List<String> paths,
            List<String> methods,
            String policy,
            String key,
            String cost,
            String plan,
            String actualCostHeader) {

        /**
         * A rule whose cost is known before the request.
         * @param paths path patterns
         * @param methods HTTP methods, or empty for every method
         * @param policy the policy's name
         * @param key SpEL over the request, or blank for one shared bucket
         * @param cost units per request, or SpEL giving them, or blank for 1
         * @param plan SpEL naming the plan, or blank for the base numbers
         */
        public Spec(List<String> paths, List<String> methods, String policy, String key, String cost, String plan) {
            this(paths, methods, policy, key, cost, plan, "");
        }

        /**
         * A rule with a numeric cost and no plan.
         * @param paths path patterns
         * @param methods HTTP methods, or empty for every method
         * @param policy the policy's name
         * @param key SpEL over the request, or blank for one shared bucket
         * @param cost units per request
         */
        public Spec(List<String> paths, List<String> methods, String policy, String key, int cost) {
            this(paths, methods, policy, key, Integer.toString(cost), "");
        }
    }

    /**
     * Parses and checks the rules.
     * @param specs the rules, in order
     * @param admissions the policies the rules may name, each settled as configured
     * @param principalProblem why {@code #principal} cannot work where the filter runs, or null when it can
     * @throws ThrottleConfigurationException naming every mistake's property
     */
    public HttpRules(List<Spec> specs, Admissions admissions, @Nullable String principalProblem) {
        this(specs, admissions, principalProblem, Set.of());
    }

    /**
     * Parses and checks the rules, leaving out those that name a policy with mistakes of its own.
     * @param specs the rules, in order
     * @param admissions the policies the rules may name, each settled as configured
     * @param principalProblem why {@code #principal} cannot work where the filter runs, or null when it can
     * @param policiesWithMistakes policies configured with mistakes, which the startup check reports
     * with every other mistake: a rule naming one is left out rather than said to name a policy that
     * is not configured
     * @throws ThrottleConfigurationException naming every mistake's property
     */
    public HttpRules(
            List<Spec> specs,
            Admissions admissions,
            @Nullable String principalProblem,
            Set<String> policiesWithMistakes) {
        PathPatternParser parser = new PathPatternParser();
        parser.setCaseSensitive(false);
        List<String> problems = new ArrayList<>();
        List<HttpRule> rules = new ArrayList<>(specs.size());
        for (int i = 0; i < specs.size(); i++) {
            HttpRule rule = parse(
                    "throttle.http.rules[" + i + "]",
                    specs.get(i),
                    parser,
                    admissions,
                    principalProblem,
                    policiesWithMistakes,
                    problems);
            if (rule != null) {
                rules.add(rule);
            }
        }
        if (!problems.isEmpty()) {
            throw new ThrottleConfigurationException(problems);
        }
        this.rules = List.copyOf(rules);
        this.usePrincipal = rules.stream().anyMatch(HttpRule::usesPrincipal);
    }

    /**
     * Whether there is no rule.
     * @return whether no request is charged by a rule
     */
    public boolean isEmpty() {
        return this.rules.isEmpty();
    }

    /**
     * Whether some rule's key reads {@code #principal}.
     * @return whether the principal must be found for a matched request
     */
    boolean usePrincipal() {
        return this.usePrincipal;
    }

    /**
     * The rules a request matches, in order.
     * @param method the request's method
     * @param path the path within the application, parsed from the raw request URI
     * @return the matches (empty, and nothing allocated, for most requests)
     */
    List<Matched> match(String method, PathContainer path) {
        List<Matched> matched = null;
        PathContainer normalized = null;
        boolean normalizedKnown = false;
        String upper = method.toUpperCase(Locale.ROOT);
        for (HttpRule rule : this.rules) {
            if (!rule.appliesTo(upper)) {
                continue;
            }
            if (!normalizedKnown) {
                normalized = RulePaths.normalized(path);
                normalizedKnown = true;
            }
            Map<String, String> variables = rule.match(path, normalized);
            if (variables != null) {
                matched = (matched != null) ? matched : new ArrayList<>(2);
                matched.add(new Matched(rule, variables));
            }
        }
        return (matched != null) ? matched : List.of();
    }

    /**
     * The charges of matched rules, in order, each under the plan and with the cost its rule chooses.
     * @param matched the matches
     * @param request the request
     * @return their charges
     */
    static List<Charge> charges(List<Matched> matched, HttpRule.RuleRequest request) {
        List<Charge> charges = new ArrayList<>(matched.size());
        for (Matched match : matched) {
            charges.add(match.rule().charge(request, match.pathVariables()));
        }
        return charges;
    }

    /**
     * The keys of matched rules, in order.
     * @param matched the matches
     * @param request the request
     * @return their keys
     */
    static String[] keys(List<Matched> matched, HttpRule.RuleRequest request) {
        String[] keys = new String[matched.size()];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = matched.get(i).rule().key(request, matched.get(i).pathVariables());
        }
        return keys;
    }

    /**
     * What each matched rule's request actually cost, as its response header says.
     * @param matched the matches
     * @param headers the response's headers by name
     * @return one per rule: the cost, or -1 where the rule reads none, the header is missing or is no
     * number; null when no rule reads one (most requests)
     */
    static long @Nullable [] actualCosts(List<Matched> matched, Function<String, @Nullable String> headers) {
        long[] costs = null;
        for (int i = 0; i < matched.size(); i++) {
            String header = matched.get(i).rule().actualCostHeader();
            if (header == null) {
                continue;
            }
            if (costs == null) {
                costs = new long[matched.size()];
                Arrays.fill(costs, -1);
            }
            costs[i] = units(headers.apply(header));
        }
        return costs;
    }

    /** A header's number of units: a number, rounded down, at least 0; -1 when it is missing or no number. */
    private static long units(@Nullable String value) {
        if (value == null) {
            return -1;
        }
        try {
            double units = Double.parseDouble(value.trim());
            return Double.isNaN(units) ? -1 : (long) Math.max(0, Math.min(units, Integer.MAX_VALUE));
        } catch (NumberFormatException ex) {
            return -1;
        }
    }

    /** A pattern's variables: {@code {id}}, {@code {*rest}}, {@code {id:[0-9]+}}. */
    private static final Pattern PATH_VARIABLE = Pattern.compile("\\{\\*?([^}:]+)(?::[^}]*)?}");

    /**
     * A name read from {@code #path} that a pattern of the rule does not capture is null for every
     * request that pattern matches: a mistake found at startup.
     */
    private static void checkPathNames(
            String property,
            String source,
            @Nullable Expression expression,
            String consequence,
            List<PathPattern> patterns,
            List<String> problems) {
        if (expression == null) {
            return;
        }
        for (String name : RuleChoices.pathNames(expression)) {
            for (PathPattern pattern : patterns) {
                Set<String> captured = new LinkedHashSet<>();
                Matcher variable = PATH_VARIABLE.matcher(pattern.getPatternString());
                while (variable.find()) {
                    captured.add(variable.group(1).trim());
                }
                if (!captured.contains(name)) {
                    problems.add(property + " '" + source + "' reads #path['" + name + "'], which the path pattern '"
                            + pattern.getPatternString() + "' does not capture, so " + consequence + ": "
                            + (captured.isEmpty()
                                    ? "it captures no variable"
                                    : "it captures " + String.join(", ", captured)));
                }
            }
        }
    }

    /** A rule that matched, with the URI template variables of its pattern. */
    record Matched(HttpRule rule, Map<String, String> pathVariables) {}

    private static @Nullable HttpRule parse(
            String property,
            Spec spec,
            PathPatternParser parser,
            Admissions admissions,
            @Nullable String principalProblem,
            Set<String> policiesWithMistakes,
            List<String> problems) {
        Throttler throttler = admissions.throttler();
        int before = problems.size();
        List<PathPattern> patterns = new ArrayList<>();
        if (spec.paths() == null || spec.paths().isEmpty()) {
            problems.add(property + ".paths is missing: name at least one path pattern, such as /api/**");
        } else {
            for (int j = 0; j < spec.paths().size(); j++) {
                String path =
                        (spec.paths().get(j) != null) ? spec.paths().get(j).trim() : "";
                if (!path.startsWith("/")) {
                    problems.add(
                            property + ".paths[" + j + "] '" + path + "' is not a path pattern: it must start with /");
                    continue;
                }
                // a request's path is matched without its trailing slash too, which a pattern that
                // ends in one would never match: /api/hello/ is the rule of /api/hello
                while (path.length() > 1 && path.endsWith("/")) {
                    path = path.substring(0, path.length() - 1);
                }
                try {
                    patterns.add(parser.parse(path));
                } catch (PatternParseException ex) {
                    problems.add(
                            property + ".paths[" + j + "] '" + path + "' is not a path pattern: " + ex.getMessage());
                }
            }
        }
        Set<String> methods = null;
        if (spec.methods() != null && !spec.methods().isEmpty()) {
            methods = new LinkedHashSet<>();
            for (int j = 0; j < spec.methods().size(); j++) {
                String method =
                        (spec.methods().get(j) != null) ? spec.methods().get(j).trim() : "";
                String name = method.toUpperCase(Locale.ROOT);
                if (!METHODS.contains(name)) {
                    // a misspelled method (PSOT) would match no request, and so limit nothing
                    problems.add(property + ".methods[" + j + "] '" + method + "' is not an HTTP method: use "
                            + String.join(", ", METHODS));
                }
                methods.add(name);
            }
        }
        Policy policy =
                (spec.policy() != null) ? throttler.policies().get(spec.policy().trim()) : null;
        boolean policyWithMistakes = policy == null
                && spec.policy() != null
                && policiesWithMistakes.contains(spec.policy().trim());
        if (policy == null && !policyWithMistakes) {
            problems.add(property + ".policy "
                    + ((spec.policy() == null || spec.policy().isBlank())
                            ? "is missing"
                            : "names '" + spec.policy() + "', which is not configured")
                    + ": name one of throttle.policies ("
                    + String.join(", ", throttler.policies().keySet()) + ")");
        }
        String costSource = (spec.cost() != null) ? spec.cost().trim() : "";
        int cost = 1;
        Expression costExpression = null;
        Set<String> variables = new LinkedHashSet<>();
        if (RuleChoices.isNumber(costSource)) {
            cost = parseCost(property, costSource, policy, problems);
        } else if (!costSource.isEmpty()) {
            costExpression = RuleChoices.parse(
                    property + ".cost", costSource, "it would never apply", principalProblem, variables, problems);
        }
        String planSource = (spec.plan() != null) ? spec.plan().trim() : "";
        Expression planExpression = planSource.isEmpty()
                ? null
                : RuleChoices.parse(
                        property + ".plan", planSource, "it would never apply", principalProblem, variables, problems);
        String source = (spec.key() != null) ? spec.key().trim() : "";
        HttpRule.KeyKind kind = source.isEmpty()
                ? HttpRule.KeyKind.SHARED
                : source.equals("#ip")
                        ? HttpRule.KeyKind.IP
                        : source.equals("#principal") ? HttpRule.KeyKind.PRINCIPAL : HttpRule.KeyKind.EXPRESSION;
        Expression expression = source.isEmpty()
                ? null
                : RuleChoices.parse(
                        property + ".key",
                        source,
                        "every request would share one bucket",
                        principalProblem,
                        variables,
                        problems);
        checkPathNames(property + ".cost", costSource, costExpression, "it would never apply", patterns, problems);
        checkPathNames(property + ".plan", planSource, planExpression, "it would never apply", patterns, problems);
        checkPathNames(
                property + ".key", source, expression, "every request would share one bucket", patterns, problems);
        boolean usesPrincipal = variables.contains("principal");
        String actualCostHeader =
                (spec.actualCostHeader() != null) ? spec.actualCostHeader().trim() : "";
        if (!actualCostHeader.isEmpty() && policy != null) {
            checkActualCost(property, actualCostHeader, policy, throttler, problems);
        }
        if (problems.size() > before || policyWithMistakes) {
            return null;
        }
        // the policy's own charge: its mode (shadow never refuses), its wait and its debt bound
        Charge charge = admissions.charge(policy.name(), cost);
        RuleChoices choices = (planExpression != null || costExpression != null)
                ? new RuleChoices(property, planExpression, costExpression)
                : null;
        return new HttpRule(
                property,
                patterns.toArray(new PathPattern[0]),
                methods,
                charge,
                choices,
                source,
                kind,
                (kind == HttpRule.KeyKind.EXPRESSION) ? expression : null,
                usesPrincipal,
                variables.contains("path"),
                actualCostHeader.isEmpty() ? null : actualCostHeader);
    }

    /** A header name (an HTTP token), a policy that carries a debt, a store that charges after the call. */
    private static void checkActualCost(
            String property, String header, Policy policy, Throttler throttler, List<String> problems) {
        if (!header.chars().allMatch((c) -> c > 32 && c < 127 && "()<>@,;:\\\"/[]?={}".indexOf(c) < 0)) {
            problems.add(property + ".actual-cost-header '" + header + "' is not a header name");
            return;
        }
        String why = BoundPolicy.whyNoActualCost(policy);
        if (why != null) {
            problems.add(property + ".actual-cost-header is set, but policy '" + policy.name()
                    + "' cannot take a cost known after the request: " + why);
        } else if (!throttler.store().chargesAfterTheCall()) {
            problems.add(property + ".actual-cost-header is set, but the "
                    + throttler.store().kind()
                    + " store does not charge a cost after the request");
        }
    }

    private static int parseCost(String property, String source, @Nullable Policy policy, List<String> problems) {
        int cost;
        try {
            cost = Integer.parseInt(source);
        } catch (NumberFormatException ex) {
            cost = Integer.MAX_VALUE;
        }
        if (policy != null && (cost < 1 || cost > policy.maxCost())) {
            problems.add(property + ".cost is " + source + ", but policy '" + policy.name() + "' (" + policy.algorithm()
                    + ") can only grant a cost from 1 to " + policy.maxCost());
        }
        return cost;
    }
}
