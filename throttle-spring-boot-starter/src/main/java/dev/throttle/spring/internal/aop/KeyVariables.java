package dev.throttle.spring.internal.aop;

import dev.throttle.spring.admission.ExpressionReads;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.core.KotlinDetector;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.Expression;

/**
 * The variables a parsed key reads ({@code #email}, {@code #p0}, {@code #ip}), found by walking
 * its SpEL tree once at startup, and the check that each exists for the method. A variable that
 * does not exist evaluates to null, and a null key puts every caller in one shared bucket: a
 * typo would let one client lock out everyone, so it fails startup instead.
 */
final class KeyVariables {

    /** Set by the starter from the request. */
    static final String IP = "ip";

    /** Set by the starter from the request. */
    static final String PRINCIPAL = "principal";

    private final Set<String> names;

    /** The first name read from the root object ({@code ip} written for {@code #ip}), or null. */
    private final @Nullable String rootRead;

    private KeyVariables(Set<String> names, @Nullable String rootRead) {
        this.names = names;
        this.rootRead = rootRead;
    }

    /**
     * Finds the variables of a parsed key.
     * @param expression the key, as {@link org.springframework.expression.spel.standard.SpelExpressionParser} parsed it
     * @return its variables
     */
    static KeyVariables of(Expression expression) {
        return new KeyVariables(ExpressionReads.variables(expression), ExpressionReads.first(expression));
    }

    /**
     * The same variables but one, which the evaluation supplies itself (such as {@code #result}).
     * @param name the variable's name, without {@code #}
     * @return the other variables
     */
    KeyVariables without(String name) {
        Set<String> others = new LinkedHashSet<>(this.names);
        others.remove(name);
        return new KeyVariables(others, this.rootRead);
    }

    /**
     * Whether the key reads a variable.
     * @param name the variable's name, without {@code #}
     * @return whether the key names it
     */
    boolean uses(String name) {
        return this.names.contains(name);
    }

    /**
     * Whether the key reads the request ({@code #ip} or {@code #principal}).
     * @return whether it needs the request
     */
    boolean usesRequest() {
        return this.names.contains(IP) || this.names.contains(PRINCIPAL);
    }

    /**
     * Whether the key reads nothing but the request ({@code #ip}, {@code #principal}): no argument,
     * no root object, so that it can be evaluated before the arguments are bound.
     * @return whether only the request is read
     */
    boolean readsOnlyRequest() {
        for (String name : this.names) {
            if (!name.equals(IP) && !name.equals(PRINCIPAL)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Whether the key reads the root object ({@code #root.args}, or {@code #this} outside a selection).
     * @return whether the evaluation needs a root object
     */
    boolean usesRoot() {
        return this.names.contains("root") || this.names.contains("this");
    }

    /**
     * Checks that every variable exists for a method.
     * @param method the annotated method
     * @param parameterNames finds the method's parameter names
     * @param principalAvailable whether something (Spring Security) can supply {@code #principal}
     * @return what is wrong, to follow the annotation's description in a message; null when nothing is
     */
    String problem(Method method, ParameterNameDiscoverer parameterNames, boolean principalAvailable) {
        String[] parameters = parameterNames.getParameterNames(method);
        for (String name : this.names) {
            if (name.equals(PRINCIPAL) && !principalAvailable) {
                return " uses #principal, but Spring Security is not on the classpath to supply one, so every call "
                        + "would share one bucket: add Spring Security, or key by a parameter ("
                        + ((parameters != null && parameters.length > 0 && parameterCount(method) > 0)
                                ? joined(parameters, ", ")
                                : (parameters != null) ? "it has none" : "#p0, #a0 and so on")
                        + ")";
            }
            if (!exists(name, parameterCount(method), parameters)) {
                return " names #" + name + ", which the method does not have, so every call would share one bucket: "
                        + parametersOf(method, parameters) + "; #ip and #principal come from the request";
            }
        }
        // the root object is null, or the call's arguments (#root.args) where a key names #root
        boolean arguments = usesRoot()
                && (this.rootRead != null)
                && (this.rootRead.equals("args") || this.rootRead.equals("getArgs()"));
        if (this.rootRead != null && !arguments) {
            return " reads '" + this.rootRead + "' from the root object, which has nothing by that name, so every call "
                    + "would share one bucket: a variable is written with # (" + parametersOf(method, parameters)
                    + "; #ip and #principal come from the request)";
        }
        return null;
    }

    private static boolean exists(String name, int parameterCount, String[] parameters) {
        if (name.equals(IP) || name.equals(PRINCIPAL) || name.equals("root") || name.equals("this")) {
            return true;
        }
        if (parameters != null && List.of(parameters).contains(name)) {
            return true;
        }
        // MethodBasedEvaluationContext binds every argument as #p<i> and #a<i> too
        if (name.length() > 1 && (name.charAt(0) == 'p' || name.charAt(0) == 'a')) {
            String index = name.substring(1);
            if (index.chars().allMatch(Character::isDigit)
                    && index.length() < 4
                    && (index.length() == 1 || index.charAt(0) != '0')) {
                return Integer.parseInt(index) < parameterCount;
            }
        }
        return false;
    }

    /**
     * The parameters a caller passes: a Kotlin {@code suspend fun}'s last one, its continuation, is the
     * compiler's, and as a key it is the same object for every call of one coroutine.
     */
    static int parameterCount(Method method) {
        return method.getParameterCount() - (KotlinDetector.isSuspendingFunction(method) ? 1 : 0);
    }

    private static String parametersOf(Method method, String[] parameters) {
        if (parameterCount(method) == 0 || (parameters != null && parameters.length == 0)) {
            return "it has no parameters";
        }
        if (parameters == null) {
            return "its parameter names are not available, since "
                    + method.getDeclaringClass().getSimpleName()
                    + " was compiled without -parameters: compile with -parameters, or name them #p0, #a0 or "
                    + "#root.args[0] and so on";
        }
        if (parameters.length == 1) {
            return "its parameter is #" + parameters[0] + " (or #p0, #a0)";
        }
        return "its parameters are " + joined(parameters, " and ") + " (or #p0, #a0 and so on)";
    }

    /** "#a", "#a and #b", "#a, #b and #c" (or with ", " throughout). */
    private static String joined(String[] parameters, String last) {
        List<String> names = new ArrayList<>();
        for (String parameter : parameters) {
            names.add("#" + parameter);
        }
        if (names.size() == 1) {
            return names.get(0);
        }
        return String.join(", ", names.subList(0, names.size() - 1)) + last + names.get(names.size() - 1);
    }
}
