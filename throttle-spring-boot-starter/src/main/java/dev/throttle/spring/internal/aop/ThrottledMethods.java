package dev.throttle.spring.internal.aop;

import dev.throttle.BoundPolicy;
import dev.throttle.CalendarWindow;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Policy;
import dev.throttle.ThrottleStore;
import dev.throttle.Throttler;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.admission.Charge;
import dev.throttle.spring.annotation.Throttled;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.KotlinDetector;
import org.springframework.core.MethodClassKey;
import org.springframework.expression.BeanResolver;
import org.springframework.util.ClassUtils;

/**
 * Finds the {@link Throttled} annotations of methods, checks them against the configured
 * policies and parses their key expressions, once per method. Thread-safe.
 */
public final class ThrottledMethods {

    private static final String SPRING_SECURITY = "org.springframework.security.core.Authentication";

    private static final String NEVER_APPLIES = " would never apply: Spring AOP cannot intercept a private, static or "
            + "final method; make it public (or package-private) and not final. Even then, a call from inside its own "
            + "class (this.method(..)) is not throttled, since it does not go through the Spring proxy: call it "
            + "through the bean, or throttle the public method that calls it";

    private final Admissions admissions;

    private final boolean principalAvailable;

    private final Map<MethodClassKey, ThrottledMethod> cache = new ConcurrentHashMap<>();

    private volatile EventLoopRule eventLoopRule;

    /** Whether the request is found on the calling thread (Spring MVC), declared by its configuration. */
    private volatile boolean requestOnCallingThread;

    /** Resolves {@code @name} in keys, plans and costs; null until a bean factory is given. */
    private volatile BeanResolver beans;

    private record EventLoopRule(boolean storeBlocks) {}

    /**
     * Creates a registry.
     * @param admissions the configured policies, which annotations may name
     */
    public ThrottledMethods(Admissions admissions) {
        this(admissions, ThrottledMethods.class.getClassLoader());
    }

    /**
     * Creates a registry.
     * @param admissions the configured policies, which annotations may name
     * @param classLoader the application's class loader: a key may use {@code #principal} only
     * where it finds Spring Security, which supplies the principal
     */
    public ThrottledMethods(Admissions admissions, ClassLoader classLoader) {
        this.admissions = admissions;
        this.principalAvailable = ClassUtils.isPresent(SPRING_SECURITY, classLoader);
    }

    /**
     * Lets key, plan and cost expressions name beans ({@code @accounts.planOf(#apiKey)}).
     * @param beanFactory the application's bean factory
     */
    public void setBeanFactory(BeanFactory beanFactory) {
        this.beans = new SingletonBeans(beanFactory);
    }

    /**
     * Declares that throttled methods may run on event-loop threads (WebFlux): a method that
     * returns a plain value there has no reactive context, so it may not use {@code #ip} or
     * {@code #principal}, nor a store that blocks. Methods already resolved are checked now, each
     * one resolved later as it is resolved; declaring the same rule again changes nothing.
     * @param storeBlocks whether the store's synchronous decisions block on I/O
     * @throws ThrottleConfigurationException naming every resolved method that breaks the rule
     */
    public void requireReactiveReturnTypes(boolean storeBlocks) {
        EventLoopRule rule = new EventLoopRule(storeBlocks);
        if (rule.equals(this.eventLoopRule)) {
            return;
        }
        this.eventLoopRule = rule;
        checkResolved(this::checkEventLoopRule);
    }

    /**
     * Declares that the request is found on the thread that calls a method (Spring MVC): a Kotlin
     * {@code suspend fun} that handles no request runs in its caller's coroutine, which may have
     * resumed on another thread (after a {@code delay}, an await, a {@code withContext}), one that
     * serves another request or none, so its keys may not read the request. Methods already resolved
     * are checked now, each one resolved later as it is resolved.
     * @throws ThrottleConfigurationException naming every resolved method that breaks the rule
     */
    public void requireRequestOnCallingThread() {
        if (this.requestOnCallingThread) {
            return;
        }
        this.requestOnCallingThread = true;
        checkResolved(this::checkRequestOnCallingThread);
    }

    /** Checks every method resolved so far by a rule declared now, reporting every one that breaks it. */
    private void checkResolved(Consumer<ThrottledMethod> rule) {
        List<String> problems = new ArrayList<>();
        for (ThrottledMethod method : this.cache.values()) {
            try {
                rule.accept(method);
            } catch (ThrottleConfigurationException ex) {
                problems.addAll(ex.problems());
            }
        }
        if (!problems.isEmpty()) {
            throw new ThrottleConfigurationException(problems);
        }
    }

    private void checkRequestOnCallingThread(ThrottledMethod method) {
        if (!this.requestOnCallingThread
                || method.throttles().isEmpty()
                || !KotlinDetector.isSuspendingFunction(method.method())
                || ThrottledAnnotations.handlesRequests(method.method())) {
            return;
        }
        for (int i = 0; i < method.throttles().size(); i++) {
            if (method.keys().usesRequest(i) || method.choicesUseRequest()) {
                throw new ThrottleConfigurationException("@Throttled(policy = \""
                        + method.throttles().get(i).policy().name()
                        + "\", key = \"" + method.keys().source(i) + "\") on " + describe(method.method())
                        + " uses the request, which a suspend fun that handles no request cannot see in a Spring MVC "
                        + "application: its caller's coroutine may have resumed on a thread that serves another "
                        + "request, or none, so calls would be charged to another client's key or share one bucket. "
                        + "Pass the address or name as a parameter and key by it, or throttle the handler");
            }
        }
    }

    private void checkEventLoopRule(ThrottledMethod method) {
        EventLoopRule rule = this.eventLoopRule;
        if (rule == null || method.throttles().isEmpty()) {
            return;
        }
        if (method.reactive()) {
            if (!method.plan().carriesContext()) {
                // subscribed through another library: the subscriber's context (and so the exchange) is lost
                refuseRequestKeys(method, method.plan().description(), " (only Reactor carries it)");
            }
            return;
        }
        if (rule.storeBlocks()) {
            throw new ThrottleConfigurationException("@Throttled on " + describe(method.method())
                    + " returns a plain value in a WebFlux application, where it would call the store on an event-loop "
                    + "thread and block it: return Mono or Flux");
        }
        refuseRequestKeys(method, "a plain value", "");
    }

    private static void refuseRequestKeys(ThrottledMethod method, String returning, String why) {
        for (int i = 0; i < method.throttles().size(); i++) {
            if (method.keys().usesRequest(i)) {
                throw new ThrottleConfigurationException("@Throttled(policy = \""
                        + method.throttles().get(i).policy().name()
                        + "\", key = \"" + method.keys().source(i) + "\") on " + describe(method.method())
                        + " uses the request, which a method returning " + returning
                        + " cannot see in a WebFlux application" + why + ": return Mono or Flux");
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
        boolean classLevel = !ThrottledAnnotations.annotations(userClass).isEmpty();
        boolean controller = classLevel && ThrottledAnnotations.isController(userClass);
        // every method's mistakes are collected, so that one start reports them all
        List<String> problems = new ArrayList<>();
        List<String> hidden = new ArrayList<>();
        for (Method method : ThrottledAnnotations.methodsOf(userClass)) {
            if (ThrottledAnnotations.isSuspendBody(method)) {
                continue;
            }
            try {
                if (validate(method, userClass, classLevel, controller)
                        && ThrottledAnnotations.hiddenByFinalClass(method, userClass)) {
                    hidden.add(describe(method));
                }
            } catch (ThrottleConfigurationException ex) {
                problems.addAll(ex.problems());
            }
        }
        if (!hidden.isEmpty()) {
            problems.add("@Throttled on " + String.join(", ", hidden)
                    + " would never apply: " + userClass.getSimpleName() + " is a final class (a record, or a Kotlin "
                    + "class that is not open, is one), which Spring AOP cannot subclass to intercept its calls; "
                    + "make it a class that is not final");
        }
        if (!problems.isEmpty()) {
            throw new ThrottleConfigurationException(problems);
        }
    }

    /** Checks one method; returns whether it is throttled. */
    private boolean validate(Method method, Class<?> userClass, boolean classLevel, boolean controller) {
        boolean annotated = !ThrottledAnnotations.annotations(method).isEmpty();
        boolean covered = !annotated && classLevel && ThrottledAnnotations.appliesClassLevel(method, userClass);
        if (!ThrottledAnnotations.canBeIntercepted(method)) {
            if (annotated) {
                throw new ThrottleConfigurationException("@Throttled on " + describe(method) + NEVER_APPLIES);
            }
            if (covered && controller) {
                // a handler the class-level annotation was meant to cover: a request path left unthrottled
                throw new ThrottleConfigurationException("The class-level @Throttled of " + userClass.getSimpleName()
                        + " covers its handler " + describe(method) + ", but" + NEVER_APPLIES);
            }
        }
        if (annotated || covered) {
            resolve(method, userClass);
            return true;
        }
        return false;
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
            checkRequestOnCallingThread(built);
            return built;
        });
    }

    private ThrottledMethod build(Method method, Class<?> targetClass) {
        Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
        List<Throttled> annotations = List.copyOf(ThrottledAnnotations.find(specific, targetClass));
        if (annotations.isEmpty()) {
            return ThrottledMethod.NONE;
        }
        List<Charge> throttles = new ArrayList<>();
        String[] keys = new String[annotations.size()];
        String[] policies = new String[annotations.size()];
        String[] plans = new String[annotations.size()];
        String[] anchors = new String[annotations.size()];
        String[] costs = new String[annotations.size()];
        String[] actualCosts = new String[annotations.size()];
        for (int i = 0; i < annotations.size(); i++) {
            throttles.add(throttle(specific, annotations.get(i)));
            keys[i] = annotations.get(i).key();
            policies[i] = annotations.get(i).policy();
            plans[i] = annotations.get(i).plan();
            anchors[i] = annotations.get(i).anchor();
            if (!anchors[i].isBlank()) {
                checkAnchor(specific, annotations.get(i), throttles.get(i));
            }
            costs[i] = annotations.get(i).costExpression();
            actualCosts[i] = annotations.get(i).actualCost();
            if (!actualCosts[i].isBlank()) {
                checkActualCost(specific, annotations.get(i), throttles.get(i));
            }
        }
        ThrottleKeys parsed;
        ThrottleChoices choices;
        ActualCosts actual;
        try {
            parsed = new ThrottleKeys(specific, keys, policies, this.principalAvailable, this.beans);
            choices = ThrottleChoices.parse(
                    specific, plans, anchors, costs, policies, this.principalAvailable, this.beans);
            actual = ActualCosts.parse(specific, actualCosts, policies, this.beans);
        } catch (InvalidKeyException ex) {
            throw new ThrottleConfigurationException(where(specific, annotations.get(ex.index())) + ex.getMessage());
        }
        ThrottledMethod built = new ThrottledMethod(specific, throttles, parsed, choices, actual);
        checkOutcomeIsVisible(built);
        checkReturnTypeIsHandedBack(built);
        return built;
    }

    /**
     * An anchor day is where a month window starts: on a policy without one it would silently do
     * nothing, so that a customer's month would not be what the code says.
     */
    private static void checkAnchor(Method method, Throttled annotation, Charge throttle) {
        Policy policy = throttle.policy();
        if (!(policy instanceof FixedWindowPolicy window
                && window.calendar() != null
                && window.calendar().unit() == CalendarWindow.Unit.MONTH)) {
            throw new ThrottleConfigurationException(where(method, annotation)
                    + ": anchor = \"" + annotation.anchor() + "\" names the day a month window starts on, but policy '"
                    + policy.name() + "' is " + policy.algorithm()
                    + ((policy instanceof FixedWindowPolicy) ? " over a window that is not a calendar month" : "")
                    + "; give it algorithm: fixed-window and window: 1M");
        }
    }

    /**
     * Reset-on-success and count-failures act on the call's outcome. A return type whose outcome
     * arrives later by a path the advisor cannot follow would make every call look like a
     * success, so that a lockout resets on every attempt: refused at startup instead.
     */
    /**
     * A reactive call is handed back as its library's adapter makes it from the followed publisher:
     * a declared subtype of what the adapter makes (a Kotlin {@code StateFlow} where it makes a
     * {@code Flow}) would fail every call with a ClassCastException.
     */
    private static void checkReturnTypeIsHandedBack(ThrottledMethod method) {
        ReturnTypes.Plan plan = method.plan();
        if (plan.kind() == ReturnTypes.Kind.SUBSCRIBED
                && plan.adapter() != null
                && !ReactiveThrottling.handsBack(method.method().getReturnType(), plan)) {
            Class<?> reactiveType = plan.adapter().getReactiveType();
            throw new ThrottleConfigurationException("@Throttled on " + describe(method.method()) + " returns "
                    + plan.description() + ", but a throttled call of it is handed back as a "
                    + reactiveType.getSimpleName() + " (the followed publisher, through its library's adapter): "
                    + "declare " + reactiveType.getSimpleName());
        }
    }

    private static void checkOutcomeIsVisible(ThrottledMethod method) {
        ReturnTypes.Plan plan = method.plan();
        if (plan.kind() != ReturnTypes.Kind.HIDDEN) {
            return;
        }
        for (Charge throttle : method.throttles()) {
            if (throttle.releasesAtEnd()
                    && !ReturnTypes.endsWithRequest(method.method().getReturnType())) {
                throw new ThrottleConfigurationException(
                        "@Throttled(policy = \"" + throttle.policy().name()
                                + "\") on " + describe(method.method()) + " returns " + plan.description()
                                + ", whose end the advisor cannot see, but policy '"
                                + throttle.policy().name()
                                + "' is a concurrency limit, whose slot is released when the call ends: return the value,"
                                + " a CompletableFuture, a reactive type, or one of Spring MVC's asynchronous results"
                                + " (a Callable, DeferredResult, emitter or StreamingResponseBody) instead");
            }
            if (method.hasActualCost()) {
                throw new ThrottleConfigurationException(
                        "@Throttled(actualCost) on " + describe(method.method()) + " returns " + plan.description()
                                + ", whose value the advisor cannot read: return the value, a ResponseEntity, a "
                                + "CompletableFuture, or a reactive type (Mono, Flux, Publisher, RxJava's...) instead");
            }
            if (throttle.settlesOnSuccess()) {
                String property = throttle.resetOnSuccess() ? "reset-on-success" : "count";
                throw new ThrottleConfigurationException(
                        "@Throttled(policy = \"" + throttle.policy().name()
                                + "\") on " + describe(method.method()) + " returns " + plan.description()
                                + ", whose outcome the advisor cannot see, but throttle.policies."
                                + throttle.policy().name()
                                + "." + property + " acts on the outcome: return the value, a ResponseEntity, a "
                                + "CompletableFuture, or a reactive type (Mono, Flux, Publisher, RxJava's...) instead");
            }
        }
    }

    private Charge throttle(Method method, Throttled annotation) {
        Throttler throttler = this.admissions.throttler();
        Policy policy = throttler.policies().get(annotation.policy());
        if (policy == null) {
            throw new ThrottleConfigurationException(where(method, annotation) + " names policy '" + annotation.policy()
                    + "', which is not configured: add throttle.policies." + annotation.policy()
                    + ".algorithm (configured: "
                    + String.join(", ", throttler.policies().keySet()) + ")");
        }
        if (!annotation.costExpression().isBlank() && annotation.cost() != 1) {
            throw new ThrottleConfigurationException(where(method, annotation) + " sets both cost ("
                    + annotation.cost() + ") and costExpression (\"" + annotation.costExpression()
                    + "\"): set one of them");
        }
        if (annotation.cost() < 1 || annotation.cost() > policy.maxCost()) {
            throw new ThrottleConfigurationException(where(method, annotation) + " has cost " + annotation.cost()
                    + ", but policy '" + policy.name() + "' (" + policy.algorithm()
                    + ") can only grant a cost from 1 to "
                    + policy.maxCost());
        }
        Charge charge = this.admissions.charge(policy.name(), annotation.cost());
        if (annotation.maxWait().isBlank()) {
            return charge;
        }
        if (annotation.maxWait().strip().matches("[+-]?\\d+")
                && !annotation.maxWait().strip().matches("[+-]?0+")) {
            throw new ThrottleConfigurationException(where(method, annotation) + " has maxWait \""
                    + annotation.maxWait() + "\", a number without a unit, which would be read as milliseconds: "
                    + "write the unit (such as 2s, or 500ms if milliseconds are meant)");
        }
        Duration wait;
        try {
            wait = DurationStyle.detectAndParse(annotation.maxWait().trim());
        } catch (IllegalArgumentException ex) {
            throw new ThrottleConfigurationException(where(method, annotation) + " has maxWait \""
                    + annotation.maxWait() + "\", which is no duration (such as 2s, 500ms or PT2S)");
        }
        if (wait.isNegative()) {
            throw new ThrottleConfigurationException(
                    where(method, annotation) + " has maxWait " + wait + ": a wait must not be negative");
        }
        String why = wait.isZero() ? null : BoundPolicy.whyNoWait(policy);
        if (why != null) {
            throw new ThrottleConfigurationException(where(method, annotation) + " has maxWait \""
                    + annotation.maxWait() + "\", but policy '" + policy.name() + "' cannot wait: " + why
                    + " (a wait is for token-bucket, gcra and fixed-window policies of one limit)");
        }
        return charge.withWait(wait);
    }

    /**
     * A cost known after the call needs an algorithm that carries a debt and a store that charges
     * after the call; a concurrency limit's slot is no cost.
     */
    private void checkActualCost(Method method, Throttled annotation, Charge charge) {
        String why = BoundPolicy.whyNoActualCost(charge.policy());
        if (why != null) {
            throw new ThrottleConfigurationException(where(method, annotation) + " has actualCost \""
                    + annotation.actualCost() + "\", but policy '"
                    + charge.policy().name()
                    + "' cannot take a cost known after the call: " + why);
        }
        ThrottleStore store = this.admissions.throttler().store();
        if (!store.chargesAfterTheCall()) {
            throw new ThrottleConfigurationException(where(method, annotation) + " has actualCost \""
                    + annotation.actualCost() + "\", but the " + store.kind()
                    + " store does not charge a cost after the call");
        }
    }

    private static String where(Method method, Throttled annotation) {
        return "@Throttled(policy = \"" + annotation.policy() + "\", key = \"" + annotation.key() + "\") on "
                + describe(method);
    }

    private static String describe(Method method) {
        return ThrottledAnnotations.describe(method);
    }
}
