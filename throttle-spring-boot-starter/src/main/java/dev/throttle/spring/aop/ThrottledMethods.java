package dev.throttle.spring.aop;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.function.Function;
import java.util.stream.Collectors;

import org.springframework.aop.support.AopUtils;
import org.springframework.core.MethodClassKey;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.util.ClassUtils;

import dev.throttle.Policy;
import dev.throttle.Throttler;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.annotation.Throttled;

/**
 * Finds the {@link Throttled} annotations of methods, checks them against the configured
 * policies and parses their key expressions, once per method. Thread-safe.
 */
public final class ThrottledMethods {

	private static final ThrottledMethod NONE = new ThrottledMethod(null, List.of());

	private final SpelExpressionParser parser = new SpelExpressionParser();

	private final Throttler throttler;

	private final Function<String, PolicyUsage> usage;

	private final Map<MethodClassKey, ThrottledMethod> cache = new ConcurrentHashMap<>();

	private volatile EventLoopRule eventLoopRule;

	private record EventLoopRule(boolean storeBlocks) {
	}

	/**
	 * Creates a registry.
	 * @param throttler the throttler whose policies annotations may name
	 * @param usage how each policy is used (reset or refund on success), by name
	 */
	public ThrottledMethods(Throttler throttler, Function<String, PolicyUsage> usage) {
		this.throttler = throttler;
		this.usage = usage;
	}

	/**
	 * How a policy's takings are settled when the call returns normally.
	 *
	 * @param resetOnSuccess clear the key's state
	 * @param refundOnSuccess give back what the call took (count failures only)
	 */
	public record PolicyUsage(boolean resetOnSuccess, boolean refundOnSuccess) {

		/** Count every call; change nothing on success. */
		public static final PolicyUsage DEFAULT = new PolicyUsage(false, false);

	}

	/**
	 * Whether a method carries {@link Throttled}, on itself or (when public) on its class.
	 * Cheap enough for a pointcut: no policy is consulted.
	 * @param method the method
	 * @param targetClass the class the method is called on, or null
	 * @return whether calls to it are throttled
	 */
	static boolean isThrottled(Method method, Class<?> targetClass) {
		Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
		if (!annotations(specific).isEmpty()) {
			return true;
		}
		return appliesClassLevel(specific) && !annotations(userClass(specific, targetClass)).isEmpty();
	}

	/**
	 * Declares that throttled methods may run on event-loop threads (WebFlux): a method that
	 * returns a plain value there has no reactive context, so it may not use {@code #ip} or
	 * {@code #principal}, nor a store that blocks. Methods already resolved are checked again.
	 * @param storeBlocks whether the store's synchronous decisions block on I/O
	 * @throws ThrottleConfigurationException for a method that breaks the rule
	 */
	public void requireReactiveReturnTypes(boolean storeBlocks) {
		this.eventLoopRule = new EventLoopRule(storeBlocks);
		this.cache.values().forEach(this::checkEventLoopRule);
	}

	private void checkEventLoopRule(ThrottledMethod method) {
		EventLoopRule rule = this.eventLoopRule;
		if (rule == null || method.throttles().isEmpty() || ThrottleInterceptor.isReactive(method.method())) {
			return;
		}
		if (rule.storeBlocks()) {
			throw new ThrottleConfigurationException("@Throttled on " + describe(method.method())
					+ " returns a plain value in a WebFlux application, where it would call the store on an event-loop "
					+ "thread and block it: return Mono or Flux");
		}
		for (ThrottledMethod.Throttle throttle : method.throttles()) {
			String key = throttle.keySource();
			if (key.contains("#ip") || key.contains("#principal")) {
				throw new ThrottleConfigurationException("@Throttled(policy = \"" + throttle.policy().name()
						+ "\", key = \"" + key + "\") on " + describe(method.method())
						+ " uses the request, which a method returning a plain value cannot see in a WebFlux "
						+ "application: return Mono or Flux");
			}
		}
	}

	/**
	 * Checks every annotated method of {@code type} now, so that mistakes fail at startup.
	 * @param type a bean's class
	 * @throws ThrottleConfigurationException naming the method, the policy and the property
	 */
	public void validate(Class<?> type) {
		Class<?> userClass = ClassUtils.getUserClass(type);
		boolean classLevel = !annotations(userClass).isEmpty();
		for (Method method : methodsOf(userClass)) {
			boolean annotated = !annotations(method).isEmpty();
			if (annotated && !canBeIntercepted(method)) {
				throw new ThrottleConfigurationException("@Throttled on " + describe(method) + " would never apply: "
						+ "Spring AOP cannot intercept a private, static or final method; make it public");
			}
			if (annotated || (classLevel && appliesClassLevel(method))) {
				resolve(method, userClass);
			}
		}
	}

	/**
	 * Returns the throttles of a method, resolving them on first use.
	 * @param method the invoked method
	 * @param targetClass the class it is called on, or null
	 * @return the throttles (empty when none apply)
	 */
	ThrottledMethod resolve(Method method, Class<?> targetClass) {
		return this.cache.computeIfAbsent(new MethodClassKey(method, targetClass), (key) -> {
			ThrottledMethod built = build(method, targetClass);
			checkEventLoopRule(built);
			return built;
		});
	}

	private ThrottledMethod build(Method method, Class<?> targetClass) {
		Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
		Collection<Throttled> annotations = annotations(specific);
		if (annotations.isEmpty() && appliesClassLevel(specific)) {
			annotations = annotations(userClass(specific, targetClass));
		}
		if (annotations.isEmpty()) {
			return NONE;
		}
		List<ThrottledMethod.Throttle> throttles = new ArrayList<>();
		for (Throttled annotation : annotations) {
			throttles.add(throttle(specific, annotation));
		}
		ThrottledMethod built = new ThrottledMethod(specific, List.copyOf(throttles));
		checkOutcomeIsVisible(built);
		return built;
	}

	/**
	 * Reset-on-success and count-failures act on the call's outcome. A return type whose outcome
	 * arrives later by a path the advisor cannot follow (a Callable or a DeferredResult that Spring
	 * MVC completes, a plain Future) would make every call look like a success, so that a lockout
	 * resets on every attempt: refused at startup instead. Values, ResponseEntity,
	 * CompletionStage, Mono and Flux are followed to their outcome.
	 */
	private static void checkOutcomeIsVisible(ThrottledMethod method) {
		Class<?> returnType = method.method().getReturnType();
		boolean hidden = Callable.class.isAssignableFrom(returnType)
				|| (Future.class.isAssignableFrom(returnType) && !CompletionStage.class.isAssignableFrom(returnType))
				|| isNamed(returnType, "org.springframework.web.context.request.async.DeferredResult")
				|| isNamed(returnType, "org.springframework.web.context.request.async.WebAsyncTask");
		if (!hidden) {
			return;
		}
		for (ThrottledMethod.Throttle throttle : method.throttles()) {
			if (throttle.resetOnSuccess() || throttle.refundOnSuccess()) {
				String property = throttle.resetOnSuccess() ? "reset-on-success" : "count";
				throw new ThrottleConfigurationException("@Throttled(policy = \"" + throttle.policy().name()
						+ "\") on " + describe(method.method()) + " returns " + returnType.getSimpleName()
						+ ", whose outcome the advisor cannot see, but throttle.policies." + throttle.policy().name()
						+ "." + property + " acts on the outcome: return the value, a ResponseEntity, a "
						+ "CompletableFuture, Mono or Flux instead");
			}
		}
	}

	private static boolean isNamed(Class<?> type, String className) {
		for (Class<?> current = type; current != null; current = current.getSuperclass()) {
			if (current.getName().equals(className)) {
				return true;
			}
		}
		return false;
	}

	private ThrottledMethod.Throttle throttle(Method method, Throttled annotation) {
		String where = "@Throttled(policy = \"" + annotation.policy() + "\", key = \"" + annotation.key() + "\") on "
				+ describe(method);
		Policy policy = this.throttler.policies().get(annotation.policy());
		if (policy == null) {
			throw new ThrottleConfigurationException(where + " names policy '" + annotation.policy()
					+ "', which is not configured: add throttle.policies." + annotation.policy()
					+ ".algorithm (configured: " + String.join(", ", this.throttler.policies().keySet()) + ")");
		}
		if (annotation.cost() < 1 || annotation.cost() > policy.maxCost()) {
			throw new ThrottleConfigurationException(where + " has cost " + annotation.cost() + ", but policy '"
					+ policy.name() + "' (" + policy.algorithm() + ") can only grant a cost from 1 to " + policy.maxCost());
		}
		Expression key = null;
		if (!annotation.key().isBlank()) {
			try {
				key = this.parser.parseExpression(annotation.key());
			}
			catch (ParseException ex) {
				throw new ThrottleConfigurationException(where + ": the key expression does not parse: "
						+ ex.getMessage());
			}
		}
		PolicyUsage usage = Optional.ofNullable(this.usage.apply(policy.name())).orElse(PolicyUsage.DEFAULT);
		return new ThrottledMethod.Throttle(policy, key, annotation.key(), annotation.cost(), usage.resetOnSuccess(),
				usage.refundOnSuccess());
	}

	private static Collection<Throttled> annotations(java.lang.reflect.AnnotatedElement element) {
		return AnnotatedElementUtils.findMergedRepeatableAnnotations(element, Throttled.class);
	}

	private static Class<?> userClass(Method method, Class<?> targetClass) {
		return ClassUtils.getUserClass((targetClass != null) ? targetClass : method.getDeclaringClass());
	}

	private static boolean appliesClassLevel(Method method) {
		return Modifier.isPublic(method.getModifiers()) && !Modifier.isStatic(method.getModifiers())
				&& method.getDeclaringClass() != Object.class && !method.isSynthetic() && !method.isBridge();
	}

	private static boolean canBeIntercepted(Method method) {
		int modifiers = method.getModifiers();
		return !Modifier.isPrivate(modifiers) && !Modifier.isStatic(modifiers) && !Modifier.isFinal(modifiers);
	}

	private static List<Method> methodsOf(Class<?> type) {
		Map<String, Method> methods = new java.util.LinkedHashMap<>();
		for (Method method : type.getMethods()) {
			methods.put(signature(method), method);
		}
		for (Class<?> current = type; current != null && current != Object.class; current = current.getSuperclass()) {
			for (Method method : current.getDeclaredMethods()) {
				methods.putIfAbsent(signature(method), method);
			}
		}
		return new ArrayList<>(methods.values());
	}

	private static String signature(Method method) {
		return method.getName() + Arrays.toString(method.getParameterTypes());
	}

	static String describe(Method method) {
		return method.getDeclaringClass().getSimpleName() + "." + method.getName() + "("
				+ Arrays.stream(method.getParameterTypes()).map(Class::getSimpleName).collect(Collectors.joining(", "))
				+ ")";
	}

}
