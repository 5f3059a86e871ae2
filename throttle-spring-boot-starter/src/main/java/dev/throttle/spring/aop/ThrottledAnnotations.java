package dev.throttle.spring.aop;

import java.lang.reflect.AnnotatedElement;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.springframework.aop.support.AopUtils;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;

import dev.throttle.spring.annotation.Throttled;

/**
 * Where {@link Throttled} applies: on a method, or (for its public methods) on the class. Consults
 * no policy, so that the pointcut can use it before any store exists.
 */
final class ThrottledAnnotations {

	private ThrottledAnnotations() {
	}

	/**
	 * Whether a method carries {@link Throttled}, on itself or (when public) on its class.
	 * @param method the method
	 * @param targetClass the class the method is called on, or null
	 * @return whether calls to it are throttled
	 */
	static boolean isThrottled(Method method, Class<?> targetClass) {
		return !find(AopUtils.getMostSpecificMethod(method, targetClass), targetClass).isEmpty();
	}

	/**
	 * Returns the annotations that apply to a method: its own, or else its class's.
	 * @param specific the most specific method
	 * @param targetClass the class the method is called on, or null
	 * @return the annotations, in declaration order (empty when none apply)
	 */
	static Collection<Throttled> find(Method specific, Class<?> targetClass) {
		Collection<Throttled> annotations = annotations(specific);
		if (annotations.isEmpty() && appliesClassLevel(specific)) {
			annotations = annotations(userClass(specific, targetClass));
		}
		return annotations;
	}

	static Collection<Throttled> annotations(AnnotatedElement element) {
		return AnnotatedElementUtils.findMergedRepeatableAnnotations(element, Throttled.class);
	}

	static boolean appliesClassLevel(Method method) {
		return Modifier.isPublic(method.getModifiers()) && !Modifier.isStatic(method.getModifiers())
				&& method.getDeclaringClass() != Object.class && !method.isSynthetic() && !method.isBridge();
	}

	static boolean canBeIntercepted(Method method) {
		int modifiers = method.getModifiers();
		return !Modifier.isPrivate(modifiers) && !Modifier.isStatic(modifiers) && !Modifier.isFinal(modifiers);
	}

	/**
	 * Returns every method of a class, public ones first, each signature once.
	 * @param type the class
	 * @return its methods
	 */
	static List<Method> methodsOf(Class<?> type) {
		Map<String, Method> methods = new LinkedHashMap<>();
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

	/**
	 * Names a method in messages: {@code Accounts.login(String, boolean)}.
	 * @param method the method
	 * @return its description
	 */
	static String describe(Method method) {
		return method.getDeclaringClass().getSimpleName() + "." + method.getName() + "("
				+ Arrays.stream(method.getParameterTypes()).map(Class::getSimpleName).collect(Collectors.joining(", "))
				+ ")";
	}

	private static Class<?> userClass(Method method, Class<?> targetClass) {
		return ClassUtils.getUserClass((targetClass != null) ? targetClass : method.getDeclaringClass());
	}

	private static String signature(Method method) {
		return method.getName() + Arrays.toString(method.getParameterTypes());
	}

}
