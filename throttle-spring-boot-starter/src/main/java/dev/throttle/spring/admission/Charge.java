package dev.throttle.spring.admission;

import dev.throttle.BoundPolicy;
import dev.throttle.ConcurrencyPolicy;
import dev.throttle.Decision;
import dev.throttle.Policy;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;

/**
 * One policy as a call is charged by it: the policy bound to the store (so that a call looks
 * nothing up by name), under a plan's numbers or the base ones, the units one call takes, how a
 * call that succeeds is settled, and whether the policy is in shadow mode (decides and charges,
 * never refuses). The key is not here: it is given per call to {@link Admission#decide}.
 *
 * <p>Made once, where an entry point is configured ({@link Admissions#charge}), and varied per call
 * with {@link #choose} when a plan or a cost is chosen per call. Immutable and thread-safe.
 */
public final class Charge {

    /** How a call that succeeds is settled. */
    public enum OnSuccess {

        /** Every call counts: a success changes nothing. */
        COUNT,

        /** A success clears the key's state (reset-on-success: consume, verify, reset). */
        RESET,

        /** A success gives back what the call took, so only failures count (count: failures). */
        REFUND
    }

    private static final BooleanSupplier ENFORCED = () -> false;

    private final BoundPolicy bound;

    private final int cost;

    private final OnSuccess onSuccess;

    private final BooleanSupplier shadow;

    private Charge(BoundPolicy bound, int cost, OnSuccess onSuccess, BooleanSupplier shadow) {
        if (cost < 1) {
            throw new IllegalArgumentException("cost must be at least 1, was " + cost);
        }
        this.bound = bound;
        this.cost = cost;
        this.onSuccess = onSuccess;
        this.shadow = shadow;
    }

    /**
     * A charge of one unit that always enforces its policy.
     * @param bound the policy, bound to the store
     * @param onSuccess how a call that succeeds is settled
     * @return the charge
     */
    public static Charge of(BoundPolicy bound, OnSuccess onSuccess) {
        return new Charge(bound, 1, onSuccess, ENFORCED);
    }

    /**
     * A charge.
     * @param bound the policy, bound to the store
     * @param cost units per call, at least 1
     * @param onSuccess how a call that succeeds is settled
     * @param shadow whether the policy is in shadow mode, read per call (it may change at run time)
     * @return the charge
     */
    public static Charge of(BoundPolicy bound, int cost, OnSuccess onSuccess, BooleanSupplier shadow) {
        return new Charge(bound, cost, onSuccess, shadow);
    }

    /**
     * The same charge for one call under a plan's numbers and with another cost.
     * @param plan the plan's name; null, blank or not configured: the base numbers
     * @param cost units this call takes
     * @return the charge, or this one when nothing differs
     */
    public Charge choose(@Nullable String plan, int cost) {
        BoundPolicy planned = this.bound.plan(plan);
        if (planned == this.bound && cost == this.cost) {
            return this;
        }
        return new Charge(planned, cost, this.onSuccess, this.shadow);
    }

    /**
     * Returns the policy, bound to the store.
     * @return the bound policy
     */
    public BoundPolicy bound() {
        return this.bound;
    }

    /**
     * Returns the policy, with the numbers of the chosen plan.
     * @return the policy
     */
    public Policy policy() {
        return this.bound.policy();
    }

    /**
     * Returns the units one call takes.
     * @return the cost
     */
    public int cost() {
        return this.cost;
    }

    /**
     * Returns how a call that succeeds is settled.
     * @return the settlement of a success
     */
    public OnSuccess onSuccess() {
        return this.onSuccess;
    }

    /**
     * Whether a success clears the key.
     * @return whether the policy resets on success
     */
    public boolean resetOnSuccess() {
        return this.onSuccess == OnSuccess.RESET;
    }

    /**
     * Whether a success gives back what the call took.
     * @return whether only failures count
     */
    public boolean refundOnSuccess() {
        return this.onSuccess == OnSuccess.REFUND;
    }

    /**
     * Whether a success changes state, so that the call's outcome must be known.
     * @return whether a success is settled
     */
    public boolean settlesOnSuccess() {
        return this.onSuccess != OnSuccess.COUNT;
    }

    /**
     * Whether the call holds what it took only while it runs (a concurrency slot), so that every
     * way it ends (success, failure, not run) releases it, whatever {@link #onSuccess()} says.
     * @return whether the policy is a concurrency limit
     */
    public boolean releasesAtEnd() {
        return this.bound.policy() instanceof ConcurrencyPolicy;
    }

    /**
     * Whether the policy only counts what it would refuse, now.
     * @return whether it is in shadow mode
     */
    public boolean shadow() {
        return this.shadow.getAsBoolean();
    }

    /**
     * Returns the shadow-mode switch this charge reads.
     * @return the switch
     */
    public BooleanSupplier mode() {
        return this.shadow;
    }

    /**
     * The state a reset leaves: what a call on a neutral key is told, nothing in use.
     * @return an allowed decision with the full quota
     */
    public Decision neutral() {
        int quota = policy().quota();
        return Decision.allow(quota, quota, 0);
    }

    @Override
    public String toString() {
        return "Charge[policy=" + this.bound.policy().name() + ", cost=" + this.cost + ", onSuccess=" + this.onSuccess
                + "]";
    }
}
