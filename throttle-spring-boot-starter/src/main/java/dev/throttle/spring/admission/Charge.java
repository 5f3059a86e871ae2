package dev.throttle.spring.admission;

import dev.throttle.BoundPolicy;
import dev.throttle.ConcurrencyPolicy;
import dev.throttle.Decision;
import dev.throttle.Policy;
import java.time.Duration;
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

    /** The longest a call waits for its turn; zero refuses at once. */
    private final Duration wait;

    private final boolean waits;

    /** The most units a key may owe after a call that cost more than its estimate; -1 for the quota. */
    private final int maxDebt;

    private Charge(BoundPolicy bound, int cost, OnSuccess onSuccess, BooleanSupplier shadow, Duration wait) {
        this(bound, cost, onSuccess, shadow, wait, -1);
    }

    private Charge(
            BoundPolicy bound, int cost, OnSuccess onSuccess, BooleanSupplier shadow, Duration wait, int maxDebt) {
        if (cost < 1) {
            throw new IllegalArgumentException("cost must be at least 1, was " + cost);
        }
        this.bound = bound;
        this.cost = cost;
        this.onSuccess = onSuccess;
        this.shadow = shadow;
        this.wait = wait;
        this.waits = !wait.isZero();
        this.maxDebt = maxDebt;
    }

    /**
     * A charge of one unit that always enforces its policy.
     * @param bound the policy, bound to the store
     * @param onSuccess how a call that succeeds is settled
     * @return the charge
     */
    public static Charge of(BoundPolicy bound, OnSuccess onSuccess) {
        return new Charge(bound, 1, onSuccess, ENFORCED, Duration.ZERO);
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
        return new Charge(bound, cost, onSuccess, shadow, Duration.ZERO);
    }

    /**
     * The same charge for one call under a plan's numbers and with another cost.
     * @param plan the plan's name; null, blank or not configured: the base numbers
     * @param cost units this call takes
     * @return the charge, or this one when nothing differs
     */
    public Charge choose(@Nullable String plan, int cost) {
        return choose(plan, 0, cost);
    }

    /**
     * The same charge for one call under a plan's numbers, with its month windows starting on a day of
     * its own (a customer's billing day, see {@link BoundPolicy#anchorDay(int)}) and with another cost.
     * @param plan the plan's name; null, blank or not configured: the base numbers
     * @param anchorDay the day of the month, 1 to 31; 0 for the policy's (or plan's) own
     * @param cost units this call takes
     * @return the charge, or this one when nothing differs
     * @throws IllegalArgumentException for a day outside 0 to 31, or a cost below 1
     */
    public Charge choose(@Nullable String plan, int anchorDay, int cost) {
        BoundPolicy planned = this.bound.plan(plan).anchorDay(anchorDay);
        if (planned == this.bound && cost == this.cost) {
            return this;
        }
        return new Charge(planned, cost, this.onSuccess, this.shadow, this.wait, this.maxDebt);
    }

    /**
     * The same charge, for calls that wait up to {@code wait} for their turn when over the limit
     * instead of being refused at once: {@link Admission#decide} then reserves the earliest turn within
     * it (one store round trip), and the admission says how long the call must wait before it proceeds
     * ({@link Admission#waitMillis()}). What an outgoing call, a job or a message listener uses to pace
     * itself rather than fail.
     * @param wait the longest wait for a turn; zero refuses at once
     * @return the charge, or this one when the wait is the same
     * @throws IllegalArgumentException for a negative wait, or a wait on a policy that cannot reserve a
     * later turn (lockout, sliding-log, several limits: see {@link BoundPolicy#whyNoWait})
     */
    public Charge withWait(Duration wait) {
        if (wait.isNegative()) {
            throw new IllegalArgumentException("wait must not be negative, was " + wait);
        }
        if (!wait.isZero()) {
            String why = BoundPolicy.whyNoWait(this.bound.policy());
            if (why != null) {
                throw new IllegalArgumentException(
                        "policy '" + this.bound.policy().name() + "' cannot wait: " + why);
            }
        }
        return wait.equals(this.wait)
                ? this
                : new Charge(this.bound, this.cost, this.onSuccess, this.shadow, wait, this.maxDebt);
    }

    /**
     * The same charge, with the most units a key may owe after a call whose actual cost
     * ({@link Admission#settleCosts}) was more than it had left.
     * @param maxDebt the debt bound, not negative
     * @return the charge
     * @throws IllegalArgumentException for a negative bound
     */
    public Charge withMaxDebt(int maxDebt) {
        if (maxDebt < 0) {
            throw new IllegalArgumentException("max-debt must not be negative, was " + maxDebt);
        }
        return new Charge(this.bound, this.cost, this.onSuccess, this.shadow, this.wait, maxDebt);
    }

    /**
     * Returns the most units a key may owe after a call that cost more than it had left: as
     * configured ({@code max-debt}), else one full quota of the policy.
     * @return the debt bound
     */
    public int maxDebt() {
        return (this.maxDebt >= 0) ? this.maxDebt : policy().quota();
    }

    /**
     * Returns the longest a call waits for its turn when over the limit.
     * @return the wait; zero when the call is refused at once
     */
    public Duration waitLimit() {
        return this.wait;
    }

    /**
     * Whether a call waits for its turn when over the limit.
     * @return whether the wait is longer than zero
     */
    public boolean waits() {
        return this.waits;
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
                + (this.wait.isZero() ? "]" : ", wait=" + this.wait + "]");
    }
}
