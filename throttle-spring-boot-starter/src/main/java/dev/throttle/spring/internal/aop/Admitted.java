package dev.throttle.spring.internal.aop;

import dev.throttle.spring.admission.Admission;
import dev.throttle.spring.internal.request.ThrottleRequestContext;

/**
 * A call's admission and the request it runs in, which is told the settled state.
 *
 * @param admission what the call's decision returned, which settles it
 * @param request the request the call runs in
 */
record Admitted(Admission admission, ThrottleRequestContext request) {

    /** Nothing taken: a safelisted client's call, which is not throttled and settles nothing. */
    static final Admitted NOTHING = new Admitted(Admission.none(), ThrottleRequestContext.NONE);

    /**
     * The same admission, settled through another context of its request.
     * @param other a context of the same request (one bound to it, to be used on another thread)
     * @return the admission with {@code other} as its request
     */
    Admitted in(ThrottleRequestContext other) {
        return new Admitted(this.admission, other);
    }

    /** Ends a call that succeeded, and tells the request the reset states. */
    void succeeded() {
        this.request.succeeded(this.admission);
    }
}
