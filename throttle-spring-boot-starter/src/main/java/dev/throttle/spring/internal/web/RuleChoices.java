package dev.throttle.spring.internal.web;

import dev.throttle.spring.admission.Charge;
import dev.throttle.spring.admission.ExpressionReads;
import dev.throttle.spring.internal.request.ChoiceExpression;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.expression.EvaluationContext;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.SpelNode;
import org.springframework.expression.spel.ast.Indexer;
import org.springframework.expression.spel.ast.StringLiteral;
import org.springframework.expression.spel.ast.VariableReference;
import org.springframework.expression.spel.standard.SpelExpression;
import org.springframework.expression.spel.standard.SpelExpressionParser;

/**
 * What one URL rule chooses per request: the plan ({@code throttle.http.rules[i].plan})
 * and the cost when it is an expression ({@code throttle.http.rules[i].cost}), both SpEL over the
 * request variables of the rule's key, parsed and checked at startup. Evaluated as
 * {@code @Throttled(plan, costExpression)} are: a plan that is null, blank or not configured means
 * the base numbers; a cost is at least 1, a cost above the policy's maximum is refused as a request
 * that can never pass, and a cost that is null, no number or fails is the rule's default of 1.
 * Request data are text, so a cost that is a string holding a number ({@code #headers['X-Cost']})
 * counts as that number. Failures are said once per rule and property at WARN, naming the
 * expression, never a value. A rule without either expression has no choices: its charge is used
 * as it is, with nothing evaluated per request. Thread-safe.
 */
final class RuleChoices {

    private static final Log logger = LogFactory.getLog(RuleChoices.class);

    /** The variables a rule's expressions may read. */
    static final Set<String> VARIABLES =
            Set.of("ip", "principal", "request", "headers", "params", "path", "root", "this");

    private static final SpelExpressionParser parser = new SpelExpressionParser();

    /** The cost of a request whose cost expression gives nothing usable. */
    private static final int DEFAULT_COST = 1;

    private final @Nullable ChoiceExpression plan;

    private final @Nullable ChoiceExpression cost;

    RuleChoices(String property, @Nullable Expression plan, @Nullable Expression cost) {
        this.plan = (plan != null) ? choice(plan, "plan", property, "the policy's base numbers") : null;
        this.cost = (cost != null) ? choice(cost, "cost", property, "a cost of 1") : null;
    }

    private static ChoiceExpression choice(Expression expression, String what, String property, String fallback) {
        return new ChoiceExpression(
                expression,
                logger,
                "The " + what + " '" + expression.getExpressionString() + "' of " + property,
                ": such requests get " + fallback + " (said once per rule)");
    }

    /**
     * Parses one of a rule's expressions and checks the variables it reads.
     * @param property the property, such as {@code throttle.http.rules[1].plan}
     * @param source the expression, trimmed and not empty
     * @param consequence what a wrong variable would cause, for the message
     * @param principalProblem why {@code #principal} cannot work where the filter runs, or null when it can
     * @param variables collects the variables read
     * @param problems collects the mistakes, each naming the property
     * @return the expression, or null when it is wrong
     */
    static @Nullable Expression parse(
            String property,
            String source,
            String consequence,
            @Nullable String principalProblem,
            Set<String> variables,
            List<String> problems) {
        Expression expression;
        Set<String> names;
        try {
            expression = parser.parseExpression(source);
            names = ExpressionReads.variables(expression);
        } catch (ParseException ex) {
            problems.add(property + " '" + source + "' does not parse: " + ex.getMessage());
            return null;
        }
        int before = problems.size();
        String what = property.substring(property.lastIndexOf('.') + 1);
        for (String name : names) {
            if (!VARIABLES.contains(name)) {
                problems.add(property + " '" + source + "' names #" + name + ", which a rule's " + what
                        + " does not have, so " + consequence + ": use #ip, #principal, #request, "
                        + "#headers['Name'], #params['name'] or #path['variable']");
            }
        }
        String rootRead = ExpressionReads.first(expression);
        if (rootRead != null) {
            // a rule's expressions have no root object: "ip" for "#ip" fails on every request
            problems.add(property + " '" + source + "' reads '" + rootRead + "' from the root object, which a rule's "
                    + what + " does not have, so " + consequence + ": a variable is written with # (#ip, #principal, "
                    + "#request, #headers['Name'], #params['name'] or #path['variable'])");
        }
        if (names.contains("principal") && principalProblem != null) {
            problems.add(property + " '" + source + "' uses #principal, but " + principalProblem);
        }
        variables.addAll(names);
        return (problems.size() > before) ? null : expression;
    }

    /**
     * Whether a cost is a whole number rather than an expression.
     * @param source the cost, trimmed
     * @return whether it is digits, with an optional sign
     */
    static boolean isNumber(String source) {
        return source.matches("[+-]?\\d+");
    }

    /**
     * The charge of one request: the rule's charge under the chosen plan, with the chosen cost.
     * @param charge the rule's charge (its base numbers and numeric cost)
     * @param context the request's variables
     * @return the charge to take
     */
    Charge choose(Charge charge, EvaluationContext context) {
        String plan = null;
        if (this.plan != null) {
            Object value = this.plan.value(context);
            plan = (value != null) ? value.toString() : null;
        }
        int units = (this.cost != null) ? cost(this.cost, context) : charge.cost();
        return charge.choose(plan, units);
    }

    private static int cost(ChoiceExpression cost, EvaluationContext context) {
        Object value = cost.value(context);
        if (value instanceof String text) {
            try {
                value = Double.valueOf(text.trim());
            } catch (NumberFormatException ex) {
                cost.warn("was text that is not a number");
                return DEFAULT_COST;
            }
        }
        return cost.units(value, DEFAULT_COST);
    }

    /**
     * The names an expression reads from {@code #path} by a literal ({@code #path['id']}).
     * @param expression a parsed expression
     * @return the names
     */
    static Set<String> pathNames(Expression expression) {
        Set<String> names = new LinkedHashSet<>();
        collectPathNames(((SpelExpression) expression).getAST(), names);
        return names;
    }

    private static void collectPathNames(SpelNode node, Set<String> names) {
        for (int i = 0; i + 1 < node.getChildCount(); i++) {
            if (node.getChild(i) instanceof VariableReference variable
                    && variable.toStringAST().equals("#path")
                    && node.getChild(i + 1) instanceof Indexer index
                    && index.getChildCount() == 1
                    && index.getChild(0) instanceof StringLiteral name) {
                names.add(String.valueOf(name.getLiteralValue().getValue()));
            }
        }
        for (int i = 0; i < node.getChildCount(); i++) {
            collectPathNames(node.getChild(i), names);
        }
    }
}
