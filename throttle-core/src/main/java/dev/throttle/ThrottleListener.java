package dev.throttle;

/**
 * Hears what a {@link Throttler} decides: for metrics, audit logs and alerts. Every method has an
 * empty default. Implementations must be thread-safe and fast: they run on the caller's thread,
 * inside the decision path (or, for non-blocking calls and store errors, on the store's I/O
 * thread). An exception thrown by {@code onDecision} or {@code onRejected} is logged nowhere and
 * propagates to the caller, so listeners should not throw.
 *
 * <p>Each decision is heard once by {@code onDecision}, with who made it; a store failure is heard
 * by {@code onStoreError}, which is not a decision: a decision that a failure mode made in the
 * store's place is heard by both, a refund or reset that failed by {@code onStoreError} alone.
 */
public interface ThrottleListener {

    /**
     * Hears every decision of {@link Throttler#tryAcquire}, allowed or not. Called by the default
     * of {@link #onDecision(Policy, Decision, DecisionSource, long)}: a listener that does not care
     * who decided overrides this one.
     * @param policy the policy
     * @param decision the decision
     * @param storeNanos how long the store took to decide
     */
    default void onDecision(Policy policy, Decision decision, long storeNanos) {}

    /**
     * Hears every decision of {@link Throttler#tryAcquire}, allowed or not, with who made it: the
     * store, a local store standing in for it, or a failure mode's fixed answer. The default calls
     * {@link #onDecision(Policy, Decision, long)}.
     * @param policy the policy
     * @param decision the decision
     * @param source who made it
     * @param storeNanos how long the store took to decide, failing included
     */
    default void onDecision(Policy policy, Decision decision, DecisionSource source, long storeNanos) {
        onDecision(policy, decision, storeNanos);
    }

    /**
     * Hears every refusal, with the key as the caller gave it (an e-mail address, an IP address):
     * mind where it is written.
     * @param policy the policy that refused
     * @param key the caller's key
     * @param decision the refusal
     */
    default void onRejected(Policy policy, String key, Decision decision) {}

    /**
     * Hears an operation (a decision, peek, refund or reset) that the store could not carry out:
     * the failure policy answered it instead, or, for a refund or reset, it did not reach the store.
     * Once per operation, never with a key; an exception thrown here is ignored.
     * @param policy the policy of the operation
     * @param error what went wrong: the store's failure, or a
     * {@link dev.throttle.resilience.StoreUnavailableException} when the store was known to be down
     * and was not asked
     */
    default void onStoreError(Policy policy, RuntimeException error) {}

    /**
     * Hears a policy changed at run time ({@link Throttler#update}): through the actuator, the
     * environment, or a change another instance of the fleet stored. Keys keep their state. An
     * exception thrown here is ignored.
     * @param before the policy's numbers until now
     * @param after the numbers it applies from now on
     */
    default void onPolicyChanged(Policy before, Policy after) {}

    /**
     * Hears a call whose cost was known only after it ran settled ({@link BoundPolicy#settle}):
     * charged its estimate before, and what it actually cost. An exception thrown here is ignored.
     * @param policy the policy
     * @param estimate units the call was charged before it ran
     * @param actualCost what it cost
     * @param debt units the key owes after the settlement: 0 when it owes nothing (or nothing more
     * was charged), -1 when a failure policy kept the charge for a store it could not reach
     */
    default void onSettled(Policy policy, int estimate, long actualCost, int debt) {}
}
