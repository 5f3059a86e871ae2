package dev.throttle.spring.internal.aop;

import dev.throttle.spring.admission.Charge;
import dev.throttle.spring.internal.request.ChoiceExpression;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.BeanResolver;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;

/**
 * What one method's throttles choose per call: the plan ({@code @Throttled(plan)}), the day their
 * month windows start on ({@code @Throttled(anchor)}) and the cost ({@code @Throttled(costExpression)}), each parsed once at startup, its variables
 * checked as a key's are, and evaluated per call over the call's arguments and request. A method
 * without either has none of this: its throttles are used as they are, with nothing per call.
 * Expressions that fail or give nothing usable fall back (the base numbers, the annotation's cost)
 * and say so once per throttle at WARN, naming the expression, never a value. Thread-safe.
 */
final class ThrottleChoices {

    private static final Log logger = LogFactory.getLog(ThrottleChoices.class);

    private static final SpelExpressionParser parser = new SpelExpressionParser();

    private static final ParameterNameDiscoverer parameterNames = new DefaultParameterNameDiscoverer();

    private final Method method;

    /** The method's parameter names, discovered once rather than per call (see ThrottleKeys.namesOf). */
    private final ParameterNameDiscoverer names;

    private final @Nullable ChoiceExpression[] plans;

    private final @Nullable ChoiceExpression[] anchors;

    private final @Nullable ChoiceExpression[] costs;

    private final @Nullable BeanResolver beans;

    private final boolean usesIp;

    private final boolean usesPrincipal;

    private ThrottleChoices(
            Method method,
            @Nullable ChoiceExpression[] plans,
            @Nullable ChoiceExpression[] anchors,
            @Nullable ChoiceExpression[] costs,
            @Nullable BeanResolver beans,
            boolean usesIp,
            boolean usesPrincipal) {
        this.method = method;
        this.names = ThrottleKeys.namesOf(method);
        this.plans = plans;
        this.anchors = anchors;
        this.costs = costs;
        this.beans = beans;
        this.usesIp = usesIp;
        this.usesPrincipal = usesPrincipal;
    }

    /**
     * Parses the plan, anchor and cost expressions of a method's throttles.
     * @param method the method whose parameters they name
     * @param plans the plan expressions, one per throttle (blank: none)
     * @param anchors the anchor-day expressions, one per throttle (blank: none)
     * @param costs the cost expressions, one per throttle (blank: none)
     * @param policies the policy of each throttle, named in messages
     * @param principalAvailable whether something can supply {@code #principal}
     * @param beans resolves {@code @name}, or null
     * @return the choices, or null when no throttle has either expression
     * @throws InvalidKeyException naming the throttle whose expression is wrong
     */
    static @Nullable ThrottleChoices parse(
            Method method,
            String[] plans,
            String[] anchors,
            String[] costs,
            String[] policies,
            boolean principalAvailable,
            @Nullable BeanResolver beans) {
        ChoiceExpression[] planned = new ChoiceExpression[plans.length];
        ChoiceExpression[] anchored = new ChoiceExpression[anchors.length];
        ChoiceExpression[] costed = new ChoiceExpression[costs.length];
        List<KeyVariables> variables = new ArrayList<>();
        boolean any = false;
        for (int i = 0; i < plans.length; i++) {
            planned[i] = choice(
                    parse(plans[i], i, "plan", method, principalAvailable, variables),
                    "plan",
                    policies[i],
                    method,
                    "the policy's base numbers");
            anchored[i] = choice(
                    parse(anchors[i], i, "anchor", method, principalAvailable, variables),
                    "anchor",
                    policies[i],
                    method,
                    "the policy's own anchor-day");
            costed[i] = choice(
                    parse(costs[i], i, "cost", method, principalAvailable, variables),
                    "cost",
                    policies[i],
                    method,
                    "the annotation's cost");
            any |= planned[i] != null || anchored[i] != null || costed[i] != null;
        }
        if (!any) {
            return null;
        }
        boolean ip = variables.stream().anyMatch((used) -> used.uses(KeyVariables.IP));
        boolean principal = variables.stream().anyMatch((used) -> used.uses(KeyVariables.PRINCIPAL));
        return new ThrottleChoices(method, planned, anchored, costed, beans, ip, principal);
    }

    private static @Nullable ChoiceExpression choice(
            @Nullable Expression expression, String what, String policy, Method method, String fallback) {
        return (expression != null)
                ? new ChoiceExpression(
                        expression,
                        logger,
                        "The " + what + " expression of @Throttled(policy = \"" + policy + "\") on "
                                + ThrottledAnnotations.describe(method),
                        ": such calls get " + fallback + " (said once per throttle)")
                : null;
    }

    private static @Nullable Expression parse(
            String source,
            int index,
            String what,
            Method method,
            boolean principalAvailable,
            List<KeyVariables> variables) {
        if (source.isBlank()) {
            return null;
        }
        Expression expression;
        try {
            expression = parser.parseExpression(source);
        } catch (ParseException ex) {
            throw new InvalidKeyException(
                    index, ": the " + what + " expression '" + source + "' does not parse: " + ex.getMessage(), ex);
        }
        KeyVariables used = KeyVariables.of(expression);
        String problem = used.problem(method, parameterNames, principalAvailable);
        if (problem != null) {
            throw new InvalidKeyException(
                    index,
                    ": the " + what + " expression '" + source + "'"
                            + problem.replace("every call would share one bucket", "it would never apply"),
                    null);
        }
        if (used.usesRoot()) {
            throw new InvalidKeyException(
                    index,
                    ": the " + what + " expression '" + source + "' reads #root or #this: name the parameters instead",
                    null);
        }
        variables.add(used);
        return expression;
    }

    /**
     * Returns the throttles of one call: each with the plan, anchor day and cost its expressions choose.
     * @param throttles the method's throttles
     * @param arguments the call's arguments
     * @param request the request the call runs in
     * @return the call's throttles, in order
     */
    List<Charge> resolve(List<Charge> throttles, Object[] arguments, ThrottleRequestContext request) {
        return resolve(throttles, context(arguments, request));
    }

    /**
     * Whether an expression reads {@code #ip}.
     * @return whether the evaluation context needs the client's address
     */
    boolean usesIp() {
        return this.usesIp;
    }

    /**
     * Whether an expression reads {@code #principal}.
     * @return whether the evaluation context needs the user's name
     */
    boolean usesPrincipal() {
        return this.usesPrincipal;
    }

    private MethodBasedEvaluationContext context(Object[] arguments, ThrottleRequestContext request) {
        MethodBasedEvaluationContext context =
                new MethodBasedEvaluationContext(null, this.method, arguments, this.names);
        if (this.beans != null) {
            context.setBeanResolver(this.beans);
        }
        if (this.usesIp || this.usesPrincipal) {
            // bind the parameters first, so that #ip and #principal always mean the request's (see ThrottleKeys)
            context.lookupVariable(" arguments ");
            if (this.usesIp) {
                context.setVariable(KeyVariables.IP, request.clientAddress());
            }
            if (this.usesPrincipal) {
                context.setVariable(KeyVariables.PRINCIPAL, request.principalName());
            }
        }
        return context;
    }

    /**
     * Returns the throttles of one call, its expressions evaluated in a context the call's keys made
     * ({@link ThrottleKeys#context}, with this method's {@code #ip} and {@code #principal}).
     * @param throttles the method's throttles
     * @param context the call's evaluation context
     * @return the call's throttles, in order
     */
    List<Charge> resolve(List<Charge> throttles, MethodBasedEvaluationContext context) {
        Charge[] chosen = new Charge[throttles.size()];
        for (int i = 0; i < chosen.length; i++) {
            Charge throttle = throttles.get(i);
            String plan = throttle.bound().plan();
            int cost = throttle.cost();
            ChoiceExpression planned = this.plans[i];
            if (planned != null) {
                Object chosenPlan = planned.value(context);
                plan = (chosenPlan != null) ? chosenPlan.toString() : null;
            }
            int anchorDay = 0;
            ChoiceExpression anchor = this.anchors[i];
            if (anchor != null) {
                anchorDay = anchor.dayOfMonth(anchor.value(context));
            }
            ChoiceExpression costed = this.costs[i];
            if (costed != null) {
                cost = costed.units(costed.value(context), cost);
            }
            chosen[i] = throttle.choose(plan, anchorDay, cost);
        }
        return List.of(chosen);
    }
}
