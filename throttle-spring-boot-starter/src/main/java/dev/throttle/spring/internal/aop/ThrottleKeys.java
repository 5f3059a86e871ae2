package dev.throttle.spring.internal.aop;

import dev.throttle.spring.admission.KeyText;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicIntegerArray;
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
 * The keys of one method's throttles: each {@code @Throttled(key)} parsed once, at startup, its
 * variables checked against the method's parameters, and evaluated per call over the call's
 * arguments and request. {@code #ip} and {@code #principal} alone are read from the request
 * without an expression; every key of a call shares one evaluation context. A key that is null or
 * cannot be evaluated shares the policy's one bucket, and says so once per throttle at WARN
 * (naming the expression, never the key). Thread-safe.
 */
final class ThrottleKeys {

    private static final Log logger = LogFactory.getLog(ThrottleKeys.class);

    private static final SpelExpressionParser parser = new SpelExpressionParser();

    private static final ParameterNameDiscoverer parameterNames = new DefaultParameterNameDiscoverer();

    /** A variable name no parameter can have: looking it up makes the context bind the parameters. */
    private static final String ARGUMENTS_LOADED = " arguments ";

    private static final byte SHARED = 0;

    private static final byte IP = 1;

    private static final byte PRINCIPAL = 2;

    private static final byte EXPRESSION = 3;

    private final Method method;

    /** The method's parameter names, discovered once rather than per call. */
    private final ParameterNameDiscoverer names;

    private final String[] sources;

    private final String[] policies;

    private final byte[] kinds;

    private final Expression[] expressions;

    private final boolean[] usesRequest;

    /** Whether an expression reads the root object: only then does a call make one. */
    private final boolean usesRoot;

    /** Whether an expression reads #ip: only then does a call of an expression look the address up. */
    private final boolean expressionsUseIp;

    /** Whether an expression reads #principal. */
    private final boolean expressionsUsePrincipal;

    /** Resolves {@code @name} in keys, or null. */
    private final BeanResolver beans;

    /** Whether a key is an expression that does not read the root object: see {@link #sharesContext()}. */
    private final boolean sharesContext;

    /** Whether every key reads nothing but the request, so that a call can be decided before its arguments exist. */
    private final boolean requestOnly;

    /** 1 once a throttle's null, blank or failed key has been reported: a WARN per throttle, not per call. */
    private final AtomicIntegerArray warned;

    /**
     * Parses the keys of a method's throttles and checks their variables.
     * @param method the method whose parameters the keys name
     * @param sources the key expressions as written, one per throttle (blank: the shared bucket)
     * @param policies the policy of each throttle, named in messages
     * @param principalAvailable whether something (Spring Security) can supply {@code #principal}
     * @throws InvalidKeyException for a key that does not parse or names a variable that does not
     * exist, naming its throttle's index
     */
    ThrottleKeys(Method method, String[] sources, String[] policies, boolean principalAvailable) {
        this(method, sources, policies, principalAvailable, null);
    }

    /**
     * Parses the keys of a method's throttles, resolving {@code @name} with {@code beans}.
     * @param method the method whose parameters the keys name
     * @param sources the key expressions as written, one per throttle (blank: the shared bucket)
     * @param policies the policy of each throttle, named in messages
     * @param principalAvailable whether something (Spring Security) can supply {@code #principal}
     * @param beans resolves bean references, or null
     */
    ThrottleKeys(Method method, String[] sources, String[] policies, boolean principalAvailable, BeanResolver beans) {
        this.method = method;
        this.names = namesOf(method);
        this.beans = beans;
        this.sources = sources.clone();
        this.policies = policies.clone();
        this.kinds = new byte[sources.length];
        this.expressions = new Expression[sources.length];
        this.usesRequest = new boolean[sources.length];
        this.warned = new AtomicIntegerArray(sources.length);
        boolean root = false;
        boolean ip = false;
        boolean principal = false;
        boolean requestOnly = true;
        boolean expressions = false;
        for (int i = 0; i < sources.length; i++) {
            this.kinds[i] = kind(sources[i]);
            if (this.kinds[i] == SHARED) {
                continue;
            }
            Expression expression = parse(sources[i], i);
            KeyVariables variables = KeyVariables.of(expression);
            String problem = variables.problem(method, parameterNames, principalAvailable);
            if (problem != null) {
                throw new InvalidKeyException(i, problem, null);
            }
            this.usesRequest[i] = variables.usesRequest();
            requestOnly &= variables.readsOnlyRequest();
            root |= variables.usesRoot();
            if (this.kinds[i] == EXPRESSION) {
                expressions = true;
                this.expressions[i] = expression;
                ip |= variables.uses(KeyVariables.IP);
                principal |= variables.uses(KeyVariables.PRINCIPAL);
            }
        }
        this.usesRoot = root;
        this.sharesContext = expressions && !root;
        this.requestOnly = requestOnly;
        this.expressionsUseIp = ip;
        this.expressionsUsePrincipal = principal;
    }

    private static byte kind(String source) {
        if (source.isBlank()) {
            return SHARED;
        }
        if ("#ip".equals(source)) {
            return IP;
        }
        return "#principal".equals(source) ? PRINCIPAL : EXPRESSION;
    }

    private static Expression parse(String source, int index) {
        try {
            return parser.parseExpression(source);
        } catch (ParseException ex) {
            throw new InvalidKeyException(index, ": the key expression does not parse: " + ex.getMessage(), ex);
        }
    }

    /**
     * Returns a key as written.
     * @param index the throttle's index
     * @return the expression's source
     */
    String source(int index) {
        return this.sources[index];
    }

    /**
     * Whether a key reads the request ({@code #ip} or {@code #principal}).
     * @param index the throttle's index
     * @return whether it needs the request
     */
    boolean usesRequest(int index) {
        return this.usesRequest[index];
    }

    /**
     * Whether every key reads nothing but the request ({@code #ip}, {@code #principal}, or no key).
     * @return whether the keys can be evaluated before the call's arguments exist
     */
    boolean requestOnly() {
        return this.requestOnly;
    }

    /**
     * Evaluates every key of a call. A key that is null or cannot be evaluated (a null along
     * {@code #form.email.trim()}, or anything a method it calls throws) is null: the call shares the
     * policy's bucket rather than escaping it or failing.
     * @param arguments the call's arguments
     * @param request the request the call runs in
     * @return one key per throttle, in order
     */
    String[] evaluate(Object[] arguments, ThrottleRequestContext request) {
        return evaluate(arguments, request, null);
    }

    /**
     * Evaluates every key of a call, in an evaluation context the call shares with its plan and
     * cost expressions (see {@link #context}).
     * @param arguments the call's arguments
     * @param request the request the call runs in
     * @param shared the call's evaluation context, or null to make one when a key needs it
     * @return one key per throttle, in order
     */
    String[] evaluate(
            Object[] arguments, ThrottleRequestContext request, @Nullable MethodBasedEvaluationContext shared) {
        String[] keys = new String[this.kinds.length];
        MethodBasedEvaluationContext context = shared;
        for (int i = 0; i < keys.length; i++) {
            switch (this.kinds[i]) {
                case IP -> keys[i] = request.clientAddress();
                case PRINCIPAL -> keys[i] = request.principalName();
                case EXPRESSION -> {
                    if (context == null) {
                        context = evaluationContext(arguments, request);
                    }
                    keys[i] = evaluate(i, context);
                }
                default -> {
                    // SHARED: null, the policy's shared bucket, as the annotation asked
                    continue;
                }
            }
            if (keys[i] == null) {
                shared(i, "was null");
            } else if (keys[i].isBlank()) {
                shared(i, "was blank");
            }
        }
        return keys;
    }

    private MethodBasedEvaluationContext evaluationContext(Object[] arguments, ThrottleRequestContext request) {
        return context(arguments, request, false, false);
    }

    /**
     * Whether a call's keys and its plan and cost expressions can share one evaluation context: the
     * keys are expressions (else they need none) that do not read the root object (plan and cost
     * expressions are evaluated without one, so that a name they call is never looked up on it).
     * @return whether {@link #context} serves the plan and cost expressions too
     */
    boolean sharesContext() {
        return this.sharesContext;
    }

    /**
     * The evaluation context of one call: its arguments by name, the bean resolver, and {@code #ip}
     * and {@code #principal} from the request when the keys, or the other expressions the context
     * serves, read them. One per call, whatever the number of expressions: making one, and binding
     * the arguments into it, costs more than evaluating a short expression.
     * @param arguments the call's arguments
     * @param request the request the call runs in
     * @param ip whether another expression of the call reads {@code #ip}
     * @param principal whether another expression of the call reads {@code #principal}
     * @return the context
     */
    MethodBasedEvaluationContext context(
            Object[] arguments, ThrottleRequestContext request, boolean ip, boolean principal) {
        MethodBasedEvaluationContext context = new MethodBasedEvaluationContext(
                this.usesRoot ? new KeyRoot(arguments, KeyVariables.parameterCount(this.method)) : null,
                this.method,
                arguments,
                this.names);
        if (this.beans != null) {
            context.setBeanResolver(this.beans);
        }
        boolean usesIp = this.expressionsUseIp || ip;
        boolean usesPrincipal = this.expressionsUsePrincipal || principal;
        if (usesIp || usesPrincipal) {
            // The context binds parameters lazily, at the first variable it misses, and that binding
            // would overwrite #ip with a parameter named ip (a client-chosen value): bind them first,
            // so that #ip and #principal always mean the request's.
            context.lookupVariable(ARGUMENTS_LOADED);
            if (usesIp) {
                context.setVariable(KeyVariables.IP, request.clientAddress());
            }
            if (usesPrincipal) {
                context.setVariable(KeyVariables.PRINCIPAL, request.principalName());
            }
        }
        return context;
    }

    /**
     * The parameter names of a method, discovered once. An evaluation context binds a call's arguments
     * by name, and asked Spring's discoverer on every call, which reads them by reflection each time
     * (a copy of the method's parameters, a new array of names): per request work on the hot path of
     * every throttled handler whose key, plan or cost is an expression.
     * @param method the method whose calls are evaluated
     * @return a discoverer that answers that method's names from memory
     */
    static ParameterNameDiscoverer namesOf(Method method) {
        String @Nullable [] names = parameterNames.getParameterNames(method);
        return new ParameterNameDiscoverer() {

            @Override
            public String @Nullable [] getParameterNames(Method called) {
                return (called == method) ? names : parameterNames.getParameterNames(called);
            }

            @Override
            public String @Nullable [] getParameterNames(Constructor<?> constructor) {
                return parameterNames.getParameterNames(constructor);
            }
        };
    }

    private String evaluate(int index, MethodBasedEvaluationContext context) {
        try {
            Object value = this.expressions[index].getValue(context);
            String key = KeyText.of(value);
            if (key == null && value != null) {
                shared(index, "was a " + value.getClass().getSimpleName() + ", " + KeyText.NAMES_THE_OBJECT);
            }
            return key;
        } catch (RuntimeException ex) {
            // SpEL rethrows what a method it calls throws (StringIndexOutOfBoundsException from
            // substring) as it is: any failure shares the bucket, never a 500. Only the exception's
            // type is logged: its message may quote the key.
            shared(index, "could not be evaluated (" + ex.getClass().getSimpleName() + ")");
            return null;
        }
    }

    private void shared(int index, String why) {
        if (this.warned.get(index) == 0 && this.warned.compareAndSet(index, 0, 1)) {
            logger.warn("Key '" + this.sources[index] + "' of @Throttled(policy = \"" + this.policies[index] + "\") on "
                    + ThrottledAnnotations.describe(this.method) + " " + why
                    + ": such calls share the policy's one bucket (said once per throttle)");
        }
    }

    /**
     * The root object of keys that name {@code #root}: {@code #root.args[0]} is the first argument (a
     * {@code suspend fun}'s continuation is no argument of its caller's).
     */
    public static final class KeyRoot {

        private final Object[] args;

        KeyRoot(Object[] args, int count) {
            this.args = (count < args.length) ? Arrays.copyOf(args, count) : args;
        }

        /**
         * Returns the call's arguments.
         * @return the arguments
         */
        public Object[] getArgs() {
            return this.args;
        }
    }
}
