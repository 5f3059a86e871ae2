package dev.throttle.spring.aop;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;

import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.EvaluationException;
import org.springframework.util.ClassUtils;
import org.springframework.util.function.SingletonSupplier;

import dev.throttle.Decision;
import dev.throttle.ThrottledException;
import dev.throttle.Throttler;

/**
 * Applies the {@code @Throttled} annotations of a call: takes from each policy in order,
 * gives back what was taken when a later policy refuses, then settles on return
 * (reset-on-success, count-failures).
 */
final class ThrottleInterceptor implements MethodInterceptor {

	private static final Log logger = LogFactory.getLog(ThrottleInterceptor.class);

	private static final boolean RESPONSE_ENTITY_PRESENT = ClassUtils
		.isPresent("org.springframework.http.ResponseEntity", ThrottleInterceptor.class.getClassLoader());

	private static final boolean REACTOR_PRESENT = ClassUtils.isPresent("reactor.core.publisher.Mono",
			ThrottleInterceptor.class.getClassLoader());

	/** A variable name no parameter can have: looking it up makes the context bind the parameters. */
	private static final String ARGUMENTS_LOADED = " arguments ";

	private final ParameterNameDiscoverer parameterNames = new DefaultParameterNameDiscoverer();

	// looked up on first use (the advisor is created before the store exists), then kept: no bean
	// factory lookup on the hot path
	private final SingletonSupplier<Throttler> throttler;

	private final SingletonSupplier<ThrottledMethods> methods;

	private final SingletonSupplier<ThrottleRequestContext> requestContext;

	/** Empty in a servlet application, where a reactive handler's request is captured per call instead. */
	private final SingletonSupplier<Optional<ReactiveThrottleRequestContext>> reactiveRequestContext;

	ThrottleInterceptor(ObjectProvider<Throttler> throttler, ObjectProvider<ThrottledMethods> methods,
			ObjectProvider<ThrottleRequestContext> requestContext,
			ObjectProvider<ReactiveThrottleRequestContext> reactiveRequestContext) {
		this.throttler = SingletonSupplier.of(throttler::getObject);
		this.methods = SingletonSupplier.of(methods::getObject);
		this.requestContext = SingletonSupplier
			.of(() -> requestContext.getIfAvailable(() -> ThrottleRequestContext.NONE));
		this.reactiveRequestContext = SingletonSupplier
			.of(() -> Optional.ofNullable(reactiveRequestContext.getIfAvailable()));
	}

	static boolean isReactive(Method method) {
		return REACTOR_PRESENT && ReactiveThrottling.isReactive(method.getReturnType());
	}

	@Override
	public Object invoke(MethodInvocation invocation) throws Throwable {
		Object target = invocation.getThis();
		Class<?> targetClass = (target != null) ? AopUtils.getTargetClass(target) : null;
		ThrottledMethod throttled = this.methods.obtain().resolve(invocation.getMethod(), targetClass);
		if (throttled.throttles().isEmpty()) {
			return invocation.proceed();
		}
		Throttler throttler = this.throttler.obtain();
		if (isReactive(throttled.method())) {
			Optional<ReactiveThrottleRequestContext> reactive = this.reactiveRequestContext.obtain();
			// Spring MVC subscribes after the handler returned: bind the servlet request now
			ThrottleRequestContext servlet = reactive.isPresent() ? null : this.requestContext.obtain().snapshot();
			return ReactiveThrottling.invoke(invocation, throttled, throttler, this, reactive.orElse(null), servlet);
		}
		ThrottleRequestContext request = this.requestContext.obtain();
		List<ThrottledMethod.Throttle> throttles = throttled.throttles();
		String[] keys = keys(throttled, invocation.getArguments(), request);
		List<PolicyDecision> decisions = new ArrayList<>(throttles.size());
		for (int i = 0; i < throttles.size(); i++) {
			ThrottledMethod.Throttle throttle = throttles.get(i);
			Decision decision = throttler.tryAcquire(throttle.policy().name(), keys[i], throttle.cost());
			if (!decision.allowed()) {
				for (int j = 0; j < i; j++) {
					throttler.refund(throttles.get(j).policy().name(), keys[j], throttles.get(j).cost());
				}
				throw new ThrottledException(throttle.policy(), decision);
			}
			decisions.add(new PolicyDecision(throttle.policy(), decision));
		}
		request.allowed(decisions);
		Object result = invocation.proceed();
		if (result instanceof CompletionStage<?> stage && throttled.settlesOnSuccess()) {
			// the call's outcome is the stage's: settle when it completes, before the caller sees it
			CompletionStage<?> settled = stage.whenComplete((value, error) -> {
				if (error == null && !isFailure(value)) {
					settleSuccess(throttler, throttles, keys);
				}
			});
			return throttled.method().getReturnType().isInstance(settled) ? settled : result;
		}
		if (!isFailure(result)) {
			settleSuccess(throttler, throttles, keys);
		}
		return result;
	}

	/** Evaluates every key of a call, sharing one evaluation context. */
	String[] keys(ThrottledMethod throttled, Object[] arguments, ThrottleRequestContext request) {
		List<ThrottledMethod.Throttle> throttles = throttled.throttles();
		String[] keys = new String[throttles.size()];
		MethodBasedEvaluationContext evaluation = null;
		for (int i = 0; i < throttles.size(); i++) {
			ThrottledMethod.Throttle throttle = throttles.get(i);
			// the commonest keys need no expression evaluation, nor an evaluation context per call
			String source = throttle.keySource();
			if ("#ip".equals(source)) {
				keys[i] = request.clientAddress();
				continue;
			}
			if ("#principal".equals(source)) {
				keys[i] = request.principalName();
				continue;
			}
			if (throttle.key() != null && evaluation == null) {
				evaluation = evaluationContext(throttled.method(), arguments, request);
			}
			keys[i] = key(throttle, evaluation);
		}
		return keys;
	}

	private MethodBasedEvaluationContext evaluationContext(Method method, Object[] arguments,
			ThrottleRequestContext request) {
		MethodBasedEvaluationContext context = new MethodBasedEvaluationContext(null, method, arguments,
				this.parameterNames);
		// The context binds parameters lazily, at the first variable it misses, and that binding would
		// overwrite #ip with a parameter named ip (a client-chosen value): bind them first, so that
		// #ip and #principal always mean the request's.
		context.lookupVariable(ARGUMENTS_LOADED);
		context.setVariable("ip", request.clientAddress());
		context.setVariable("principal", request.principalName());
		return context;
	}

	private String key(ThrottledMethod.Throttle throttle, MethodBasedEvaluationContext evaluation) {
		if (throttle.key() == null) {
			return null;
		}
		try {
			Object value = throttle.key().getValue(evaluation);
			return (value != null) ? value.toString() : null;
		}
		catch (EvaluationException ex) {
			// e.g. a null along "#form.email.trim()": the call shares the policy's bucket rather than escaping it
			if (logger.isDebugEnabled()) {
				logger.debug("Key '" + throttle.keySource() + "' of policy '" + throttle.policy().name()
						+ "' could not be evaluated; using the policy's shared bucket", ex);
			}
			return null;
		}
	}

	static boolean isFailure(Object result) {
		return RESPONSE_ENTITY_PRESENT && result instanceof org.springframework.http.ResponseEntity<?> entity
				&& entity.getStatusCode().isError();
	}

	private static void settleSuccess(Throttler throttler, List<ThrottledMethod.Throttle> throttles, String[] keys) {
		for (int i = 0; i < throttles.size(); i++) {
			ThrottledMethod.Throttle throttle = throttles.get(i);
			try {
				if (throttle.resetOnSuccess()) {
					throttler.reset(throttle.policy().name(), keys[i]);
				}
				else if (throttle.refundOnSuccess()) {
					throttler.refund(throttle.policy().name(), keys[i], throttle.cost());
				}
			}
			catch (RuntimeException ex) {
				// the call itself succeeded: failing to settle must not turn it into an error
				logger.warn("Could not settle policy '" + throttle.policy().name() + "' after a successful call", ex);
			}
		}
	}

}
