package dev.throttle.spring.internal.aop;

import dev.throttle.spring.admission.Admission;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * A call's admission, the request it runs in, which is told the settled state, and, for a call
 * whose cost is known only afterwards, the meter that reads what it returned.
 *
 * @param admission what the call's decision returned, which settles it
 * @param request the request the call runs in
 * @param meter reads the call's actual costs from what it returned; null when every cost is known before
 */
record Admitted(Admission admission, ThrottleRequestContext request, ActualCosts.@Nullable Meter meter) {

    /** Nothing taken: a safelisted client's call, which is not throttled and settles nothing. */
    static final Admitted NOTHING = new Admitted(Admission.none(), ThrottleRequestContext.NONE);

    Admitted(Admission admission, ThrottleRequestContext request) {
        this(admission, request, null);
    }

    /**
     * A call just admitted in its request, which is told what the call's success will leave
     * ({@link ThrottleRequestContext#describeSuccess}), so that its response's headers describe the
     * state after the call settles.
     * @param admission what the call's decision returned
     * @param request the request the call runs in
     * @return the admitted call
     */
    static Admitted of(Admission admission, ThrottleRequestContext request) {
        request.describeSuccess(admission);
        return new Admitted(admission, request);
    }

    /**
     * The same admission, settled through another context of its request.
     * @param other a context of the same request (one bound to it, to be used on another thread)
     * @return the admission with {@code other} as its request
     */
    Admitted in(ThrottleRequestContext other) {
        return new Admitted(this.admission, other, this.meter);
    }

    /**
     * The same admission, reading the call's actual costs with {@code meter}.
     * @param meter the call's meter, or null
     * @return the admission with the meter
     */
    Admitted metered(ActualCosts.@Nullable Meter meter) {
        return (meter == null || this == NOTHING) ? this : new Admitted(this.admission, this.request, meter);
    }

    /**
     * Reads one value the call returned (or one element of its stream) into its actual costs.
     * @param value the value
     */
    void read(@Nullable Object value) {
        if (this.meter != null) {
            this.meter.add(value);
        }
    }

    /** Ends a call that succeeded, its actual costs settled first, and tells the request the reset states. */
    void succeeded() {
        settleCosts();
        this.request.succeeded(this.admission);
    }

    /** Ends a call that failed: what its values said it cost is settled (else its estimate stands). */
    void failed() {
        settleCosts();
        this.request.failed(this.admission);
    }

    /** Like {@link #succeeded()}, without blocking. */
    CompletionStage<Void> succeededAsync() {
        return settleCostsAsync().thenCompose((done) -> this.request.succeededAsync(this.admission));
    }

    /** Like {@link #failed()}, without blocking. */
    CompletionStage<Void> failedAsync() {
        return settleCostsAsync().thenCompose((done) -> this.request.failedAsync(this.admission));
    }

    private void settleCosts() {
        if (this.meter != null) {
            this.admission.settleCosts(this.meter.actual());
        }
    }

    private CompletionStage<Void> settleCostsAsync() {
        return (this.meter != null)
                ? this.admission.settleCostsAsync(this.meter.actual())
                : java.util.concurrent.CompletableFuture.completedStage(null);
    }
}
