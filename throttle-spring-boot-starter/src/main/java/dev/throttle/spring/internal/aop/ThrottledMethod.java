package dev.throttle.spring.internal.aop;

import dev.throttle.spring.admission.Charge;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import java.lang.reflect.Method;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.springframework.context.expression.MethodBasedEvaluationContext;

/**
 * The throttles of one method, resolved and parsed once: what a call needs and nothing it would
 * have to look up.
 */
final class ThrottledMethod {

    /** A method that no throttle applies to. */
    static final ThrottledMethod NONE = new ThrottledMethod(null, List.of(), null);

    private final Method method;

    private final List<Charge> throttles;

    private final ThrottleKeys keys;

    /** The plan and cost expressions, or null when no throttle has one: then nothing is chosen per call. */
    private final ThrottleChoices choices;

    private final ReturnTypes.Plan plan;

    /** The actual-cost expressions, or null when every throttle's cost is known before the call. */
    private final @Nullable ActualCosts actualCosts;

    private final boolean settlesOnSuccess;

    private final boolean releasesAtEnd;

    private final ErrorAnswers errorAnswers;

    /** Set once a call's outcome could not be seen and was not settled: said once per method. */
    private final AtomicBoolean hiddenOutcomeReported = new AtomicBoolean();

    /**
     * Creates a resolved method whose throttles choose nothing per call.
     * @param method the method, or null for {@link #NONE}
     * @param throttles the throttles, in annotation order
     * @param keys their keys, in the same order
     */
    ThrottledMethod(Method method, List<Charge> throttles, ThrottleKeys keys) {
        this(method, throttles, keys, null);
    }

    /**
     * Creates a resolved method.
     * @param method the method, or null for {@link #NONE}
     * @param throttles the throttles, in annotation order
     * @param keys their keys, in the same order
     * @param choices their plan and cost expressions, or null when none has one
     */
    ThrottledMethod(Method method, List<Charge> throttles, ThrottleKeys keys, ThrottleChoices choices) {
        this(method, throttles, keys, choices, null);
    }

    /**
     * Creates a resolved method.
     * @param method the method, or null for {@link #NONE}
     * @param throttles the throttles, in annotation order
     * @param keys their keys, in the same order
     * @param choices their plan and cost expressions, or null when none has one
     * @param actualCosts their actual-cost expressions, or null when none has one
     */
    ThrottledMethod(
            Method method,
            List<Charge> throttles,
            ThrottleKeys keys,
            ThrottleChoices choices,
            @Nullable ActualCosts actualCosts) {
        this.method = method;
        this.actualCosts = actualCosts;
        this.throttles = List.copyOf(throttles);
        this.keys = keys;
        this.choices = choices;
        this.plan = (method != null)
                ? ReturnTypes.plan(method)
                : new ReturnTypes.Plan(ReturnTypes.Kind.VALUE, null, false, "void");
        // a cost known after the call is read from the call's outcome, as a success is settled
        this.settlesOnSuccess = actualCosts != null || this.throttles.stream().anyMatch(Charge::settlesOnSuccess);
        this.releasesAtEnd = this.throttles.stream().anyMatch(Charge::releasesAtEnd);
        this.errorAnswers = (method != null && this.settlesOnSuccess) ? ErrorAnswers.of(method) : ErrorAnswers.NONE;
    }

    Method method() {
        return this.method;
    }

    /**
     * Whether some throttle's cost is known only after the call.
     * @return whether the call's outcome is read for its actual cost
     */
    boolean hasActualCost() {
        return this.actualCosts != null;
    }

    /**
     * The same admission, with a meter for the call's actual costs when some throttle has one.
     * @param taken what the call took
     * @param arguments the call's arguments
     * @return the admission to settle the call through
     */
    Admitted metered(Admitted taken, Object[] arguments) {
        return (this.actualCosts == null) ? taken : taken.metered(this.actualCosts.meter(arguments));
    }

    List<Charge> throttles() {
        return this.throttles;
    }

    ThrottleKeys keys() {
        return this.keys;
    }

    /** Whether a plan or a cost is chosen per call by an expression. */
    boolean hasChoices() {
        return this.choices != null;
    }

    /** Whether a plan or cost expression reads the request ({@code #ip}, {@code #principal}). */
    boolean choicesUseRequest() {
        return this.choices != null && (this.choices.usesIp() || this.choices.usesPrincipal());
    }

    /**
     * Returns the throttles of one call: {@link #throttles()} itself unless some throttle chooses its
     * plan or cost per call.
     * @param arguments the call's arguments
     * @param request the request the call runs in
     * @return the call's throttles, in order
     */
    List<Charge> throttlesFor(Object[] arguments, ThrottleRequestContext request) {
        return (this.choices == null) ? this.throttles : this.choices.resolve(this.throttles, arguments, request);
    }

    /**
     * Evaluates one call's keys, plans and costs: in one evaluation context where they can share it
     * ({@link ThrottleKeys#sharesContext()}), since making a context and binding the arguments into
     * it costs more than a short expression does.
     * @param arguments the call's arguments
     * @param request the request the call runs in
     * @return the call's keys and throttles
     */
    Call call(Object[] arguments, ThrottleRequestContext request) {
        if (this.choices == null) {
            return new Call(this.keys.evaluate(arguments, request), this.throttles);
        }
        if (this.keys.sharesContext()) {
            MethodBasedEvaluationContext context =
                    this.keys.context(arguments, request, this.choices.usesIp(), this.choices.usesPrincipal());
            return new Call(
                    this.keys.evaluate(arguments, request, context), this.choices.resolve(this.throttles, context));
        }
        return new Call(
                this.keys.evaluate(arguments, request), this.choices.resolve(this.throttles, arguments, request));
    }

    /**
     * One call's keys and throttles (with the plan and cost chosen for it), in annotation order.
     * @param keys the keys
     * @param charges the throttles
     */
    record Call(String[] keys, List<Charge> charges) {}

    /**
     * How the method's calls are followed to their outcome.
     * @return the plan of its return type
     */
    ReturnTypes.Plan plan() {
        return this.plan;
    }

    /**
     * Whether the method returns a deferred reactive type (Mono, Flux, Publisher, RxJava's...),
     * so that it is throttled at subscription.
     * @return whether it is reactive
     */
    boolean reactive() {
        return this.plan.kind() == ReturnTypes.Kind.SUBSCRIBED;
    }

    /**
     * Whether the method's publisher emits many values, so that its outcome is its completion.
     * @return whether it emits many values
     */
    boolean many() {
        return this.plan.many();
    }

    /**
     * Claims the one report of a call whose outcome could not be seen.
     * @return true the first time only
     */
    boolean reportHiddenOutcome() {
        return !this.hiddenOutcomeReported.get() && this.hiddenOutcomeReported.compareAndSet(false, true);
    }

    /**
     * Whether a normal return changes state (reset-on-success or count: failures), so that the
     * call's outcome must be known.
     * @return whether any throttle settles on success
     */
    boolean settlesOnSuccess() {
        return this.settlesOnSuccess;
    }

    /**
     * How the method's calls answer an error that the settling must see besides their response's
     * status: a declared {@code @ResponseStatus}, a WebFlux response given as an argument.
     * @return the method's error answers
     */
    ErrorAnswers errorAnswers() {
        return this.errorAnswers;
    }

    /**
     * Whether a throttle holds a concurrency slot while the call runs, so that the call must be
     * ended on every path (return, exception, error, cancellation, the end of a stream).
     * @return whether any throttle releases at the call's end
     */
    boolean releasesAtEnd() {
        return this.releasesAtEnd;
    }

    /**
     * Whether the call's end must be followed at all: a success settles, or a slot is released.
     * @return whether the call is settled by its outcome
     */
    boolean settles() {
        return this.settlesOnSuccess || this.releasesAtEnd;
    }
}
