package dev.throttle.spring.internal.web;

import dev.throttle.spring.admission.Charge;
import dev.throttle.spring.admission.KeyText;
import java.util.AbstractMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.expression.Expression;
import org.springframework.expression.spel.support.StandardEvaluationContext;
import org.springframework.http.server.PathContainer;
import org.springframework.web.util.pattern.PathPattern;

/**
 * One URL rule, parsed and checked at startup: its path patterns, its methods, its charge, its
 * key, and the plan and cost it may choose per request ({@link RuleChoices}). Thread-safe.
 */
final class HttpRule {

    private static final Log logger = LogFactory.getLog(HttpRule.class);

    enum KeyKind {
        SHARED,
        IP,
        PRINCIPAL,
        EXPRESSION
    }

    private final String property;

    private final PathPattern[] patterns;

    /** Upper-case methods, or null for every method. */
    private final @Nullable Set<String> methods;

    private final Charge charge;

    /** The plan and cost chosen per request, or null when the rule chooses neither. */
    private final @Nullable RuleChoices choices;

    private final String keySource;

    private final KeyKind kind;

    private final @Nullable Expression expression;

    private final boolean usesPrincipal;

    private final boolean usesPath;

    /** The response header that says what a request cost, or null when its cost is known before. */
    private final @Nullable String actualCostHeader;

    private final AtomicBoolean warned = new AtomicBoolean();

    HttpRule(
            String property,
            PathPattern[] patterns,
            @Nullable Set<String> methods,
            Charge charge,
            @Nullable RuleChoices choices,
            String keySource,
            KeyKind kind,
            @Nullable Expression expression,
            boolean usesPrincipal,
            boolean usesPath,
            @Nullable String actualCostHeader) {
        this.property = property;
        this.patterns = patterns;
        this.methods = methods;
        this.charge = charge;
        this.choices = choices;
        this.keySource = keySource;
        this.kind = kind;
        this.expression = expression;
        this.usesPrincipal = usesPrincipal;
        this.usesPath = usesPath;
        this.actualCostHeader = actualCostHeader;
    }

    /** The response header that says what a request cost, or null when its cost is known before. */
    @Nullable
    String actualCostHeader() {
        return this.actualCostHeader;
    }

    /**
     * The charge of a request: the rule's own, or the one its plan and cost expressions choose.
     */
    Charge charge(RuleRequest request, Map<String, String> pathVariables) {
        return (this.choices != null) ? this.choices.choose(this.charge, context(request, pathVariables)) : this.charge;
    }

    boolean usesPrincipal() {
        return this.usesPrincipal;
    }

    /**
     * Whether the rule applies to a method: a rule for GET covers HEAD, which Spring MVC and WebFlux
     * answer with the GET handler.
     */
    boolean appliesTo(String method) {
        return this.methods == null
                || this.methods.contains(method)
                || (method.equals("HEAD") && this.methods.contains("GET"));
    }

    /**
     * Matches a path in any of its spellings.
     * @param path the path as parsed
     * @param normalized its normalized spelling, or null when it is the same
     * @return the URI template variables (empty when the key does not read them), or null when no
     * pattern matches
     */
    @Nullable
    Map<String, String> match(PathContainer path, @Nullable PathContainer normalized) {
        for (PathPattern pattern : this.patterns) {
            Map<String, String> variables = match(pattern, path);
            if (variables == null && normalized != null) {
                variables = match(pattern, normalized);
            }
            if (variables != null) {
                return variables;
            }
        }
        return null;
    }

    private @Nullable Map<String, String> match(PathPattern pattern, PathContainer path) {
        if (!this.usesPath) {
            return pattern.matches(path) ? Map.of() : null;
        }
        PathPattern.PathMatchInfo info = pattern.matchAndExtract(path);
        return (info != null) ? info.getUriVariables() : null;
    }

    /**
     * Evaluates the key for a request. A key that is null, blank or fails shares the policy's one
     * bucket, said once at WARN (naming the expression, never the key).
     */
    @Nullable
    String key(RuleRequest request, Map<String, String> pathVariables) {
        String key = switch (this.kind) {
            case SHARED -> null;
            case IP -> request.ip();
            case PRINCIPAL -> request.principal();
            case EXPRESSION -> evaluate(request, pathVariables);
        };
        if (this.kind != KeyKind.SHARED && (key == null || key.isBlank())) {
            shared((key == null) ? "was null" : "was blank");
            return null;
        }
        return key;
    }

    private StandardEvaluationContext context(RuleRequest request, Map<String, String> pathVariables) {
        StandardEvaluationContext context = new StandardEvaluationContext();
        context.setVariable("ip", request.ip());
        context.setVariable("principal", this.usesPrincipal ? request.principal() : null);
        context.setVariable("request", request.request());
        context.setVariable("headers", new Lookup(request::header));
        context.setVariable("params", new Lookup(request::param));
        context.setVariable("path", pathVariables);
        return context;
    }

    private @Nullable String evaluate(RuleRequest request, Map<String, String> pathVariables) {
        StandardEvaluationContext context = context(request, pathVariables);
        try {
            Object value = this.expression.getValue(context);
            String key = KeyText.of(value);
            if (key == null && value != null) {
                shared("was a " + value.getClass().getSimpleName() + ", " + KeyText.NAMES_THE_OBJECT);
            }
            return key;
        } catch (RuntimeException ex) {
            shared("could not be evaluated (" + ex.getClass().getSimpleName() + ")");
            return null;
        }
    }

    private void shared(String why) {
        if (!this.warned.get() && this.warned.compareAndSet(false, true)) {
            logger.warn("Key '" + this.keySource + "' of " + this.property + " " + why
                    + ": such requests share the policy's one bucket (said once per rule)");
        }
    }

    /** The request as a rule's key reads it. */
    interface RuleRequest {

        @Nullable
        String ip();

        @Nullable
        String principal();

        Object request();

        @Nullable
        String header(String name);

        @Nullable
        String param(String name);
    }

    /** A read-only map that looks a name up when indexed ({@code #headers['X-Api-Key']}); not enumerable. */
    static final class Lookup extends AbstractMap<String, String> {

        private final Function<String, @Nullable String> values;

        Lookup(Function<String, @Nullable String> values) {
            this.values = values;
        }

        @Override
        public @Nullable String get(Object name) {
            return (name != null) ? this.values.apply(name.toString()) : null;
        }

        @Override
        public boolean containsKey(Object name) {
            return get(name) != null;
        }

        @Override
        public Set<Entry<String, String>> entrySet() {
            return Set.of();
        }
    }
}
