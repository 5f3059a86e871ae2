package dev.throttle;

import java.util.Objects;

/**
 * Who made a decision, as {@link ThrottleListener#onDecision(Policy, Decision, DecisionSource, long)}
 * hears it: a store, from the key's state (the configured store, or a local store standing in for it
 * while it cannot answer), or a failure mode's fixed answer, given because the store could not
 * decide and no other store did ({@code open} allows, {@code closed} refuses).
 *
 * <p>Sources are a few constants made when a policy is bound, never one per decision; compare them
 * with {@link #equals}. Immutable and thread-safe.
 */
public final class DecisionSource {

    private final String store;

    private final String failureMode;

    private final boolean nearCache;

    private DecisionSource(String store, String failureMode) {
        this(store, failureMode, false);
    }

    private DecisionSource(String store, String failureMode, boolean nearCache) {
        this.store = Objects.requireNonNull(store, "store");
        this.failureMode = failureMode;
        this.nearCache = nearCache;
    }

    /**
     * A store decided, from the key's state.
     * @param store the store's short, low-cardinality name: a {@link ThrottleStore#kind()}, or
     * {@code local} for a local store standing in for it
     * @return the source
     */
    public static DecisionSource store(String store) {
        return new DecisionSource(store, null);
    }

    /**
     * The store's own refusal, repeated on this instance without asking the store: a refusal the
     * store gave earlier and that is still true (the Redis store's near cache of refusals).
     * @param store the kind of the store whose refusal it is
     * @return the source
     */
    public static DecisionSource nearCache(String store) {
        return new DecisionSource(store, null, true);
    }

    /**
     * Whether the decision was made on this instance from a refusal the store gave earlier, without a
     * call to the store.
     * @return true for a near cache's answer
     */
    public boolean isNearCache() {
        return this.nearCache;
    }

    /**
     * No store decided: a failure mode gave its fixed answer because {@code store} could not.
     * @param store the kind of the store that could not answer
     * @param failureMode the mode's name, for example {@code open} or {@code closed}
     * @return the source
     */
    public static DecisionSource failureMode(String store, String failureMode) {
        return new DecisionSource(store, Objects.requireNonNull(failureMode, "failureMode"));
    }

    /**
     * Returns the store that decided or, for a failure mode's answer, the store that could not: a
     * short, low-cardinality name ({@code memory}, {@code redis}, {@code local}) fit for a metric tag.
     * @return the store's name
     */
    public String store() {
        return this.store;
    }

    /**
     * Whether no store decided: the decision is a failure mode's fixed answer, which says nothing
     * about the key's state.
     * @return true for a failure mode's answer
     */
    public boolean isFailureMode() {
        return this.failureMode != null;
    }

    @Override
    public boolean equals(Object other) {
        return (this == other)
                || (other instanceof DecisionSource source
                        && this.store.equals(source.store)
                        && Objects.equals(this.failureMode, source.failureMode)
                        && this.nearCache == source.nearCache);
    }

    @Override
    public int hashCode() {
        return Objects.hash(this.store, this.failureMode, this.nearCache);
    }

    /**
     * Returns the store's name, followed by the failure mode that answered for it, if any.
     * @return for example {@code redis}, {@code local}, {@code redis (near cache)} or
     * {@code redis (failure-mode closed)}
     */
    @Override
    public String toString() {
        if (this.nearCache) {
            return this.store + " (near cache)";
        }
        return (this.failureMode != null) ? this.store + " (failure-mode " + this.failureMode + ")" : this.store;
    }
}
