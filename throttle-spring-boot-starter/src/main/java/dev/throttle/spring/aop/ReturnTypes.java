package dev.throttle.spring.aop;

import java.util.concurrent.Callable;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Future;

import org.springframework.util.ClassUtils;

/**
 * What a throttled method's return type says about its outcome: whether it is reactive (followed
 * to its outcome by {@link ReactiveThrottling}), whether its outcome is hidden from the advisor,
 * and whether a returned value is a failure. Names optional classes (Reactor, Spring Web) only by
 * string, so that it loads without them.
 */
final class ReturnTypes {

	private static final ClassLoader classLoader = ReturnTypes.class.getClassLoader();

	private static final Class<?> MONO = resolve("reactor.core.publisher.Mono");

	private static final Class<?> FLUX = resolve("reactor.core.publisher.Flux");

	private static final boolean RESPONSE_ENTITY_PRESENT = ClassUtils.isPresent("org.springframework.http.ResponseEntity",
			classLoader);

	private ReturnTypes() {
	}

	/**
	 * Whether calls returning {@code type} are throttled at subscription (Mono or Flux).
	 * @param type a return type
	 * @return whether it is reactive
	 */
	static boolean isReactive(Class<?> type) {
		return (MONO != null && MONO.isAssignableFrom(type)) || isMany(type);
	}

	/**
	 * Whether calls returning {@code type} emit many values (Flux), so that their outcome is their
	 * completion rather than their value.
	 * @param type a return type
	 * @return whether it is a Flux
	 */
	static boolean isMany(Class<?> type) {
		return FLUX != null && FLUX.isAssignableFrom(type);
	}

	/**
	 * Whether the outcome of a call returning {@code type} arrives later by a path the advisor
	 * cannot follow: a Callable or a DeferredResult that Spring MVC completes, a plain Future.
	 * Values, ResponseEntity, CompletionStage, Mono and Flux are followed to their outcome.
	 * @param type a return type
	 * @return whether the outcome is hidden
	 */
	static boolean hidesOutcome(Class<?> type) {
		return Callable.class.isAssignableFrom(type)
				|| (Future.class.isAssignableFrom(type) && !CompletionStage.class.isAssignableFrom(type))
				|| isNamed(type, "org.springframework.web.context.request.async.DeferredResult")
				|| isNamed(type, "org.springframework.web.context.request.async.WebAsyncTask");
	}

	/**
	 * Whether a returned value is a failed outcome although no exception was thrown: a
	 * {@code ResponseEntity} with an error status.
	 * @param value what the call returned (or a reactive call emitted)
	 * @return whether it counts as a failure
	 */
	static boolean isFailure(Object value) {
		return RESPONSE_ENTITY_PRESENT && value instanceof org.springframework.http.ResponseEntity<?> entity
				&& entity.getStatusCode().isError();
	}

	private static boolean isNamed(Class<?> type, String className) {
		for (Class<?> current = type; current != null; current = current.getSuperclass()) {
			if (current.getName().equals(className)) {
				return true;
			}
		}
		return false;
	}

	private static Class<?> resolve(String className) {
		return ClassUtils.isPresent(className, classLoader) ? ClassUtils.resolveClassName(className, classLoader) : null;
	}

}
