package dev.throttle.spring.internal.aop;

import dev.throttle.spring.internal.request.ChoiceExpression;
import java.lang.reflect.Method;
import java.util.Optional;
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
import org.springframework.http.ResponseEntity;

/**
 * The {@code @Throttled(actualCost)} expressions of one method, parsed once at startup (their
 * variables checked: {@code #result} and the method's parameters), and per call a {@link Meter} that
 * reads what the call returned: each value it returned ({@code #result}: unwrapped from a
 * {@code ResponseEntity} and an {@code Optional}; each element of a stream) is added to each
 * throttle's actual cost. An expression that fails or gives no number adds nothing, said once at WARN
 * naming the expression, never a value. Thread-safe: a meter is fed by one call's signals, one after
 * another, but a stream's cancel may come while an element is read (a lock with no I/O under it).
 */
final class ActualCosts {

    static final String RESULT = "result";

    private static final Log logger = LogFactory.getLog(ActualCosts.class);

    private static final SpelExpressionParser parser = new SpelExpressionParser();

    private static final ParameterNameDiscoverer parameterNames = new DefaultParameterNameDiscoverer();

    private final Method method;

    private final ParameterNameDiscoverer names;

    private final @Nullable ChoiceExpression[] costs;

    private final @Nullable BeanResolver beans;

    private ActualCosts(Method method, @Nullable ChoiceExpression[] costs, @Nullable BeanResolver beans) {
        this.method = method;
        this.names = ThrottleKeys.namesOf(method);
        this.costs = costs;
        this.beans = beans;
    }

    /**
     * Parses the actual-cost expressions of a method's throttles.
     * @param method the method whose parameters they name
     * @param sources the expressions, one per throttle (blank: the cost is known before the call)
     * @param policies the policy of each throttle, named in messages
     * @param beans resolves {@code @name}, or null
     * @return the costs, or null when no throttle has an expression
     * @throws InvalidKeyException naming the throttle whose expression is wrong
     */
    static @Nullable ActualCosts parse(
            Method method, String[] sources, String[] policies, @Nullable BeanResolver beans) {
        ChoiceExpression[] costs = new ChoiceExpression[sources.length];
        boolean any = false;
        for (int i = 0; i < sources.length; i++) {
            Expression expression = parse(sources[i], i, method);
            if (expression != null) {
                costs[i] = new ChoiceExpression(
                        expression,
                        logger,
                        "The actual-cost expression of @Throttled(policy = \"" + policies[i] + "\") on "
                                + ThrottledAnnotations.describe(method),
                        ": such values add nothing to the call's cost (said once per throttle)");
                any = true;
            }
        }
        return any ? new ActualCosts(method, costs, beans) : null;
    }

    private static @Nullable Expression parse(String source, int index, Method method) {
        if (source.isBlank()) {
            return null;
        }
        Expression expression;
        try {
            expression = parser.parseExpression(source);
        } catch (ParseException ex) {
            throw new InvalidKeyException(
                    index, ": the actualCost expression '" + source + "' does not parse: " + ex.getMessage(), ex);
        }
        KeyVariables used = KeyVariables.of(expression).without(RESULT);
        if (used.usesRequest() || used.usesRoot()) {
            throw new InvalidKeyException(
                    index,
                    ": the actualCost expression '" + source + "' reads #ip, #principal, #root or #this, but it"
                            + " reads #result and the method's parameters only",
                    null);
        }
        String problem = used.problem(method, parameterNames, false);
        if (problem != null) {
            throw new InvalidKeyException(
                    index,
                    ": the actualCost expression '" + source + "'"
                            + problem.replace("so every call would share one bucket", "so it could never be read")
                                    .replace("; #ip and #principal come from the request", "; #result is the value"),
                    null);
        }
        return expression;
    }

    /**
     * Whether throttle {@code index} has an actual cost.
     * @param index the throttle's position
     * @return whether its cost is known after the call
     */
    boolean has(int index) {
        return this.costs[index] != null;
    }

    /**
     * A meter for one call.
     * @param arguments the call's arguments
     * @return the meter
     */
    Meter meter(Object[] arguments) {
        return new Meter(arguments);
    }

    /** One call's actual costs, added up from what it returned. */
    final class Meter {

        private final Object[] arguments;

        /** Per throttle: the sum so far, or -1 while nothing was read. */
        private final long[] sums;

        Meter(Object[] arguments) {
            this.arguments = arguments;
            this.sums = new long[ActualCosts.this.costs.length];
            java.util.Arrays.fill(this.sums, -1);
        }

        /**
         * Adds what one value costs: the call's value, or one element of its stream.
         * @param value the value; a ResponseEntity counts by its body, an Optional by its content; null
         * or an empty Optional is nothing to read
         */
        synchronized void add(@Nullable Object value) {
            Object result = unwrapped(value);
            if (result == null) {
                return;
            }
            MethodBasedEvaluationContext context = new MethodBasedEvaluationContext(
                    null, ActualCosts.this.method, this.arguments, ActualCosts.this.names);
            if (ActualCosts.this.beans != null) {
                context.setBeanResolver(ActualCosts.this.beans);
            }
            // bind the parameters first, so that #result always means the value
            context.lookupVariable(" arguments ");
            context.setVariable(RESULT, result);
            for (int i = 0; i < this.sums.length; i++) {
                ChoiceExpression cost = ActualCosts.this.costs[i];
                if (cost == null) {
                    continue;
                }
                Object units = cost.value(context);
                if (units instanceof Number number && !Double.isNaN(number.doubleValue())) {
                    long add = (long) Math.max(0, Math.min(number.doubleValue(), Integer.MAX_VALUE));
                    this.sums[i] = Math.min(Math.max(this.sums[i], 0) + add, Integer.MAX_VALUE);
                } else if (units != null) {
                    cost.warn("was a " + units.getClass().getSimpleName() + ", not a number");
                }
            }
        }

        /**
         * Returns each throttle's actual cost, for {@link dev.throttle.spring.admission.Admission#settleCosts}.
         * @return one per throttle: the sum, or -1 where nothing was read (the estimate stands)
         */
        synchronized long[] actual() {
            return this.sums.clone();
        }

        private static @Nullable Object unwrapped(@Nullable Object value) {
            Object result = value;
            if (result != null && ReturnTypes.isEntity(result)) {
                result = Entities.body(result);
            }
            if (result instanceof Optional<?> optional) {
                result = optional.orElse(null);
            }
            return result;
        }
    }

    /** Kept apart so that ActualCosts loads without Spring Web. */
    private static final class Entities {

        static @Nullable Object body(Object entity) {
            return ((ResponseEntity<?>) entity).getBody();
        }
    }
}
