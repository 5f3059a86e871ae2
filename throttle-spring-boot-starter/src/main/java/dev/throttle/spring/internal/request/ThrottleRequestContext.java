package dev.throttle.spring.internal.request;

import dev.throttle.Decision;
import dev.throttle.ThrottledException;
import dev.throttle.spring.admission.Admission;
import dev.throttle.spring.admission.Charge;
import dev.throttle.spring.admission.PolicyDecision;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * What a throttled call learns from, and tells, the request it runs in: the client's address
 * ({@code #ip}), the authenticated user's name ({@code #principal}), and the decisions of an
 * allowed call (so that the web layer can send rate-limit headers). Implementations are
 * thread-safe and read the current request from thread-bound state.
 */
public interface ThrottleRequestContext {

    /** No request: {@code #ip} and {@code #principal} are null and nothing is written. */
    ThrottleRequestContext NONE = new ThrottleRequestContext() {

        @Override
        public Admission admit(List<Charge> charges, @Nullable String[] keys) {
            return Admission.decide(charges, keys);
        }

        @Override
        public void succeeded(Admission admission) {
            admission.succeeded();
        }
    };

    /**
     * Decides a call that runs in this request ({@link Admission#decide}), and tells the request the
     * decisions of the enforcing policies, or the refusal before it is thrown.
     * @param charges the call's charges, in order
     * @param keys their keys, in the same order
     * @return the admission, to end by the call's outcome
     * @throws ThrottledException when a policy refuses (what the earlier ones took is given back)
     */
    default Admission admit(List<Charge> charges, @Nullable String[] keys) {
        Admission admission;
        try {
            admission = Admission.decide(charges, keys);
        } catch (ThrottledException refusal) {
            refused(new PolicyDecision(refusal.getPolicy(), refusal.getDecision()));
            throw refusal;
        }
        allowed(enforced(admission));
        return admission;
    }

    /**
     * Like {@link #admit}, without blocking.
     * @param charges the call's charges, in order
     * @param keys their keys, in the same order
     * @return completes with the admission; fails with a {@link ThrottledException} when a policy refuses
     */
    default CompletionStage<Admission> admitAsync(List<Charge> charges, @Nullable String[] keys) {
        CompletableFuture<Admission> deciding =
                Admission.decideAsync(charges, keys).toCompletableFuture();
        CompletableFuture<Admission> admitted = deciding.handle((admission, error) -> {
            if (error != null) {
                Throwable cause =
                        (error instanceof CompletionException && error.getCause() != null) ? error.getCause() : error;
                if (cause instanceof ThrottledException refusal) {
                    refused(new PolicyDecision(refusal.getPolicy(), refusal.getDecision()));
                }
                throw (error instanceof CompletionException completion) ? completion : new CompletionException(error);
            }
            allowed(enforced(admission));
            return admission;
        });
        // a caller that gives up (a cancelled Mono) stops the decision too: a call waiting for a slot leaves
        admitted.whenComplete((admission, error) -> {
            if (admitted.isCancelled() && !deciding.cancel(false)) {
                // decided just before: the admission this stage would have handed on is lost with it
                deciding.thenAccept(Admission::refundAsync);
            }
        });
        return admitted;
    }

    /**
     * Ends a call of this request that succeeded ({@link Admission#succeeded()}), and tells the
     * request the state of each key a reset-on-success cleared, so that the response's headers
     * describe the state after the call settled.
     * @param admission what {@link #admit} returned
     */
    default void succeeded(Admission admission) {
        admission.succeeded();
        tellResets(admission);
    }

    /**
     * Like {@link #succeeded(Admission)}, without blocking.
     * @param admission what {@link #admitAsync} completed with
     * @return completes when every settlement is done; never fails
     */
    default CompletionStage<Void> succeededAsync(Admission admission) {
        return admission.succeededAsync().thenRun(() -> tellResets(admission));
    }

    /**
     * Ends a call of this request that failed ({@link Admission#failed()}), and tells the request the
     * state of each key that counts failures only: what {@link #describeSuccess} told does not hold,
     * a failure counts.
     * @param admission what {@link #admit} returned
     */
    default void failed(Admission admission) {
        admission.failed();
        tellCounted(admission);
    }

    /**
     * Like {@link #failed(Admission)}, without blocking.
     * @param admission what {@link #admitAsync} completed with
     * @return completes when every settlement is done; never fails
     */
    default CompletionStage<Void> failedAsync(Admission admission) {
        return admission.failedAsync().thenRun(() -> tellCounted(admission));
    }

    private void tellCounted(Admission admission) {
        List<PolicyDecision> counted = null;
        for (int i = 0; i < admission.size(); i++) {
            Charge charge = admission.charge(i);
            if (charge.onSuccess() == Charge.OnSuccess.REFUND && !charge.shadow()) {
                counted = (counted != null) ? counted : new ArrayList<>(1);
                counted.add(new PolicyDecision(charge.policy(), admission.decision(i)));
            }
        }
        if (counted != null) {
            allowed(counted);
        }
    }

    private void tellResets(Admission admission) {
        List<PolicyDecision> reset = null;
        for (int i = 0; i < admission.size(); i++) {
            Charge charge = admission.charge(i);
            if (admission.wasReset(i) && !charge.shadow()) {
                reset = (reset != null) ? reset : new ArrayList<>(1);
                reset.add(new PolicyDecision(charge.policy(), charge.neutral()));
            }
        }
        if (reset != null) {
            allowed(reset);
        }
    }

    /** The decisions whose policies enforce: a shadow policy sends no headers. */
    private static List<PolicyDecision> enforced(Admission admission) {
        int size = admission.size();
        if (size == 1) {
            return admission.charge(0).shadow()
                    ? List.of()
                    : List.of(new PolicyDecision(admission.charge(0).policy(), admission.decision(0)));
        }
        List<PolicyDecision> enforced = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            if (!admission.charge(i).shadow()) {
                enforced.add(new PolicyDecision(admission.charge(i).policy(), admission.decision(i)));
            }
        }
        return enforced;
    }

    /**
     * Tells the request, for each policy of an admitted call that counts failures only, the state its
     * success will leave (what the call took given back): the response is usually written before the
     * call ends (a stream's headers go with its first element, long before the give-back), and most
     * calls succeed. A failure tells the counted state again ({@link #failed(Admission)}) while the
     * response is open, as an exception's or an error status's is when the call ends.
     * @param admission what {@link #admit} returned
     */
    default void describeSuccess(Admission admission) {
        List<PolicyDecision> givenBack = null;
        for (int i = 0; i < admission.size(); i++) {
            Charge charge = admission.charge(i);
            if (charge.onSuccess() == Charge.OnSuccess.REFUND
                    && !charge.shadow()
                    && admission.decision(i).allowed()) {
                givenBack = (givenBack != null) ? givenBack : new ArrayList<>(1);
                givenBack.add(new PolicyDecision(charge.policy(), givenBack(admission.decision(i), charge.cost())));
            }
        }
        if (givenBack != null) {
            allowed(givenBack);
        }
    }

    /** An allowed decision as it reads once its cost is given back, each of several limits alike. */
    private static Decision givenBack(Decision decision, int cost) {
        if (decision.limitCount() == 1) {
            return givenBackOne(decision, cost);
        }
        Decision[] parts = new Decision[decision.limitCount()];
        for (int part = 0; part < parts.length; part++) {
            parts[part] = givenBackOne(decision.limit(part), cost);
        }
        return Decision.ofLimits(parts);
    }

    /** One limit's decision once its cost is given back: full again, or that much more left. */
    private static Decision givenBackOne(Decision decision, int cost) {
        int remaining = (int) Math.min(decision.limit(), (long) decision.remaining() + cost);
        return (remaining >= decision.limit())
                ? Decision.allow(decision.limit(), decision.limit(), 0)
                : Decision.allow(
                        decision.limit(), remaining, decision.resetAfterMillis(), decision.nextUnitAfterMillis(), 0);
    }

    /**
     * Returns the client address of the current request.
     * @return the address as the server sees it, or null outside a request
     */
    default @Nullable String clientAddress() {
        return null;
    }

    /**
     * Returns the name of the current request's authenticated user.
     * @return the name, or null when there is none
     */
    default @Nullable String principalName() {
        return null;
    }

    /**
     * Hears the decisions of a call that every policy allowed, before the call runs.
     * @param decisions the decisions, in annotation order
     */
    default void allowed(List<PolicyDecision> decisions) {}

    /**
     * Hears a refusal where it is decided, before the exception that carries it is thrown, so that
     * the response has {@code Retry-After} and the rate-limit headers whatever renders the refusal
     * (the starter's handler, or the application's own). The default does nothing.
     * @param refusal the refusing policy and its decision
     */
    default void refused(PolicyDecision refusal) {}

    /**
     * Whether the current request's client address is safelisted ({@code throttle.http.safelist}):
     * such a request is never throttled. The default says no.
     * @return whether throttling is skipped
     */
    default boolean safelisted() {
        return false;
    }

    /**
     * Returns an attribute of the current request: how a decision taken before the handler's
     * arguments were bound reaches the handler's advice. The default has none.
     * @param name the attribute's name
     * @return the attribute, or null
     */
    default @Nullable Object getAttribute(String name) {
        return null;
    }

    /**
     * Removes an attribute of the current request. The default does nothing.
     * @param name the attribute's name
     */
    default void removeAttribute(String name) {}

    /**
     * Returns the status the current request's response has been given so far: how a call that
     * answers by setting it ({@code response.sendError(401)} in a handler that returns nothing) is
     * seen to fail. The default has no response.
     * @return the status, or 0 when there is no response
     */
    default int responseStatus() {
        return 0;
    }

    /**
     * Leaves an action for the end of the current request, however it ends (written, failed, its
     * client gone): how a call whose reactive body may never be read is ended. The default has no
     * request, and says so.
     * @param action what to run when the request ends
     * @return whether the request will run it
     */
    default boolean atEnd(Runnable action) {
        return false;
    }

    /**
     * Ends a call when the current request's asynchronous processing ends (it completes, times out
     * or fails), as {@link Admission#failed()}: how a handler that returned an emitter, a
     * {@code StreamingResponseBody}, a {@code DeferredResult} or a {@code Callable} releases its
     * concurrency slots at the end of the stream. The default has no request and says no.
     * @param admission the call's admission
     * @return whether the request will end the call; false when the caller must end it
     */
    default boolean releaseWhenRequestEnds(Admission admission) {
        return false;
    }

    /**
     * Returns a context bound to the current request that stays right when used later on another
     * thread: what a Spring MVC handler returning {@code Mono} or {@code Flux} needs, since its
     * publisher is subscribed, and its decisions made, after the handler has returned. The default
     * returns this context.
     * @return a context for the current request
     */
    default ThrottleRequestContext snapshot() {
        return this;
    }
}
