package dev.throttle.spring.internal.aop;

import dev.throttle.spring.annotation.Throttled;
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
import org.springframework.core.annotation.MergedAnnotations;
import org.springframework.core.annotation.MergedAnnotations.SearchStrategy;
import org.springframework.util.ClassUtils;

/**
 * Where {@link Throttled} applies: on a method, or on the class. On a controller
 * ({@code @Controller}, {@code @RestController}) a class-level annotation applies to its
 * request-handling methods ({@code @RequestMapping} and its variants) only; on any other bean to
 * its public methods; never to {@code @InitBinder}, {@code @ModelAttribute} or
 * {@code @ExceptionHandler} methods, which Spring MVC calls around a request (several times per
 * request, for a binder) and which would charge one request several times. Consults no policy, so
 * that the pointcut can use it before any store exists. Names Spring Web's annotations only by
 * string, so that it loads without them.
 */
final class ThrottledAnnotations {

    private static final String CONTROLLER = "org.springframework.stereotype.Controller";

    private static final String REQUEST_MAPPING = "org.springframework.web.bind.annotation.RequestMapping";

    private static final String[] AROUND_A_REQUEST = {
        "org.springframework.web.bind.annotation.InitBinder",
        "org.springframework.web.bind.annotation.ModelAttribute",
        "org.springframework.web.bind.annotation.ExceptionHandler"
    };

    private ThrottledAnnotations() {}

    /**
     * Whether a method carries {@link Throttled}, on itself or (when public) on its class.
     * @param method the method
     * @param targetClass the class the method is called on, or null
     * @return whether calls to it are throttled
     */
    static boolean isThrottled(Method method, Class<?> targetClass) {
        return !find(AopUtils.getMostSpecificMethod(method, targetClass), targetClass)
                .isEmpty();
    }

    /**
     * Returns the annotations that apply to a method: its own, or else its class's.
     * @param specific the most specific method
     * @param targetClass the class the method is called on, or null
     * @return the annotations, in declaration order (empty when none apply)
     */
    static Collection<Throttled> find(Method specific, Class<?> targetClass) {
        Collection<Throttled> annotations = annotations(specific);
        if (annotations.isEmpty()) {
            Class<?> type = userClass(specific, targetClass);
            Collection<Throttled> classLevel = annotations(type);
            if (!classLevel.isEmpty() && appliesClassLevel(specific, type)) {
                return classLevel;
            }
        }
        return annotations;
    }

    static Collection<Throttled> annotations(AnnotatedElement element) {
        return AnnotatedElementUtils.findMergedRepeatableAnnotations(element, Throttled.class);
    }

    /**
     * Whether a class-level annotation of {@code type} applies to one of its methods: a
     * request-handling method of a controller, or a public method of any other bean; never a
     * binder, model-attribute or exception-handler method.
     * @param method the method
     * @param type the class that carries the annotation
     * @return whether the class's annotations apply to the method
     */
    static boolean appliesClassLevel(Method method, Class<?> type) {
        if (Modifier.isStatic(method.getModifiers())
                || method.getDeclaringClass() == Object.class
                || method.isSynthetic()
                || method.isBridge()) {
            return false;
        }
        if (isController(type)) {
            return handlesRequests(method);
        }
        if (!Modifier.isPublic(method.getModifiers())) {
            return false;
        }
        MergedAnnotations annotations = MergedAnnotations.from(method, SearchStrategy.TYPE_HIERARCHY);
        for (String aroundARequest : AROUND_A_REQUEST) {
            if (annotations.isPresent(aroundARequest)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Whether a class is a Spring MVC or WebFlux controller, as their handler mappings see it.
     * @param type the class
     * @return whether it carries {@code @Controller} (or {@code @RestController})
     */
    static boolean isController(Class<?> type) {
        return MergedAnnotations.from(type, SearchStrategy.TYPE_HIERARCHY).isPresent(CONTROLLER);
    }

    /**
     * Whether a method handles requests: it carries {@code @RequestMapping} or a variant of it
     * ({@code @GetMapping}, ...), on itself or on a method it overrides.
     * @param method the method
     * @return whether it is a handler method
     */
    static boolean handlesRequests(Method method) {
        return MergedAnnotations.from(method, SearchStrategy.TYPE_HIERARCHY).isPresent(REQUEST_MAPPING);
    }

    /**
     * Whether calls of a method on a final class (a record, a Kotlin class that is not open) escape
     * every proxy: Spring AOP cannot subclass the class, and no interface of it declares the method.
     * @param method the method
     * @param targetClass the class it is called on, or null
     * @return whether no Spring proxy can intercept the method's calls
     */
    static boolean hiddenByFinalClass(Method method, Class<?> targetClass) {
        if (targetClass == null || !Modifier.isFinal(targetClass.getModifiers())) {
            return false;
        }
        for (Class<?> type : ClassUtils.getAllInterfacesForClassAsSet(targetClass)) {
            if (ClassUtils.hasMethod(type, method.getName(), method.getParameterTypes())) {
                return false;
            }
        }
        return true;
    }

    /**
     * Whether a method is the body Kotlin compiles a {@code suspend fun} of an open class into: a
     * static {@code name$suspendImpl} that carries the function's annotations and is called by the
     * public method of the same name, which is the one a proxy intercepts.
     * @param method a method
     * @return whether it is such a body
     */
    static boolean isSuspendBody(Method method) {
        return Modifier.isStatic(method.getModifiers()) && method.getName().endsWith("$suspendImpl");
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
                + Arrays.stream(method.getParameterTypes())
                        .map(Class::getSimpleName)
                        .collect(Collectors.joining(", "))
                + ")";
    }

    private static Class<?> userClass(Method method, Class<?> targetClass) {
        return ClassUtils.getUserClass((targetClass != null) ? targetClass : method.getDeclaringClass());
    }

    private static String signature(Method method) {
        return method.getName() + Arrays.toString(method.getParameterTypes());
    }
}
