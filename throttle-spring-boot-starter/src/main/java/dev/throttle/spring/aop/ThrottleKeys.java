package dev.throttle.spring.aop;

import java.lang.reflect.Method;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.EvaluationException;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;

/**
 * The keys of one method's throttles: each {@code @Throttled(key)} parsed once, at startup, and
 * evaluated per call over the call's arguments and request. {@code #ip} and {@code #principal}
 * alone are read from the request without an expression; every key of a call shares one
 * evaluation context. Thread-safe.
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

	private final String[] sources;

	private final String[] policies;

	private final byte[] kinds;

	private final Expression[] expressions;

	/**
	 * Parses the keys of a method's throttles.
	 * @param method the method whose parameters the keys name
	 * @param sources the key expressions as written, one per throttle (blank: the shared bucket)
	 * @param policies the policy of each throttle, named in messages
	 * @throws InvalidKeyException for a key that does not parse, naming its throttle's index
	 */
	ThrottleKeys(Method method, String[] sources, String[] policies) {
		this.method = method;
		this.sources = sources.clone();
		this.policies = policies.clone();
		this.kinds = new byte[sources.length];
		this.expressions = new Expression[sources.length];
		for (int i = 0; i < sources.length; i++) {
			this.kinds[i] = kind(sources[i]);
			if (this.kinds[i] == EXPRESSION) {
				this.expressions[i] = parse(sources[i], i);
			}
		}
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
		}
		catch (ParseException ex) {
			throw new InvalidKeyException(index, ex);
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
		String source = this.sources[index];
		return source.contains("#ip") || source.contains("#principal");
	}

	/**
	 * Evaluates every key of a call. A key that is null or cannot be evaluated (a null along
	 * {@code #form.email.trim()}) is null: the call shares the policy's bucket rather than escaping it.
	 * @param arguments the call's arguments
	 * @param request the request the call runs in
	 * @return one key per throttle, in order
	 */
	String[] evaluate(Object[] arguments, ThrottleRequestContext request) {
		String[] keys = new String[this.kinds.length];
		MethodBasedEvaluationContext context = null;
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
					// SHARED: null, the policy's shared bucket
				}
			}
		}
		return keys;
	}

	private MethodBasedEvaluationContext evaluationContext(Object[] arguments, ThrottleRequestContext request) {
		MethodBasedEvaluationContext context = new MethodBasedEvaluationContext(null, this.method, arguments,
				parameterNames);
		// The context binds parameters lazily, at the first variable it misses, and that binding would
		// overwrite #ip with a parameter named ip (a client-chosen value): bind them first, so that
		// #ip and #principal always mean the request's.
		context.lookupVariable(ARGUMENTS_LOADED);
		context.setVariable("ip", request.clientAddress());
		context.setVariable("principal", request.principalName());
		return context;
	}

	private String evaluate(int index, MethodBasedEvaluationContext context) {
		try {
			Object value = this.expressions[index].getValue(context);
			return (value != null) ? value.toString() : null;
		}
		catch (EvaluationException ex) {
			if (logger.isDebugEnabled()) {
				logger.debug("Key '" + this.sources[index] + "' of policy '" + this.policies[index]
						+ "' could not be evaluated; using the policy's shared bucket", ex);
			}
			return null;
		}
	}

	/**
	 * A key that does not parse, with the index of its throttle.
	 */
	static final class InvalidKeyException extends RuntimeException {

		private static final long serialVersionUID = 1L;

		private final int index;

		InvalidKeyException(int index, ParseException cause) {
			super(cause.getMessage(), cause);
			this.index = index;
		}

		int index() {
			return this.index;
		}

	}

}
