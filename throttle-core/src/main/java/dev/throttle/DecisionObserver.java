package dev.throttle;

/**
 * Sees each decision of a {@link Throttler} while it is made, around the store's call: what a
 * tracing system needs to show a decision as a span with the store's call inside it (listeners hear
 * a decision only once it is made). No tracing library is named here; the starter adapts Micrometer's
 * Observation API.
 *
 * <p>Per decision, {@link #isObserving()} is asked first: while it answers false the decision costs
 * nothing more (no allocation). Otherwise {@link #start} is called before the store decides, the
 * store is called inside {@link Observed#openScope()} (so that a client instrumented with the same
 * tracing sees the decision as its call's parent), and the decision is ended exactly once, by
 * {@link Observed#decided} or {@link Observed#failed}; for a non-blocking decision, on the thread
 * that completes it. Implementations must be thread-safe and never throw.
 */
public interface DecisionObserver {

    /**
     * Whether decisions are observed now: asked per decision.
     * @return false to decide without observing
     */
    boolean isObserving();

    /**
     * Starts observing one decision, before the store is asked.
     * @param policy the policy (with the numbers of the plan that decides); never the key, which
     * does not belong in a trace
     * @return the observation, to end once
     */
    Observed start(Policy policy);

    /** One decision being observed. */
    interface Observed {

        /**
         * Makes the decision current on the calling thread until the scope is closed.
         * @return the scope
         */
        Scope openScope();

        /**
         * Ends the observation with the decision and who made it.
         * @param decision the decision
         * @param source who made it
         */
        void decided(Decision decision, DecisionSource source);

        /**
         * Ends the observation with the failure of the store's call (a store without a failure
         * policy).
         * @param error the failure
         * @param source the store whose call failed
         */
        void failed(Throwable error, DecisionSource source);
    }

    /** A decision made current on a thread; closed on the same thread. */
    interface Scope extends AutoCloseable {

        @Override
        void close();
    }
}
