package dev.throttle;

import java.time.Duration;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * The programmatic face of throttling: named policies over one {@link ThrottleStore}.
 *
 * <p>Keys are normalized before they reach the store: a {@code null} or blank key falls into the
 * policy's one shared bucket (never a bypass), and a key longer than {@value #MAX_KEY_LENGTH}
 * characters is stored as its SHA-256 digest. Thread-safe.
 */
public final class Throttler {

    /** Longest key stored as given; longer keys are stored hashed. */
    public static final int MAX_KEY_LENGTH = 200;

    /** The key that {@code null} and blank keys share. */
    public static final String SHARED_KEY = "";

    private final ThrottleStore store;

    private final Map<String, BoundPolicy> bound;

    /** Hear decisions, refusals, store errors and changes of policies, in order. */
    private final ThrottleListener[] listeners;

    /**
     * Binds {@code policies} to {@code store}.
     * @param store where state lives
     * @param policies the policies, with distinct names
     * @throws IllegalArgumentException when two policies share a name
     */
    public Throttler(ThrottleStore store, Collection<? extends Policy> policies) {
        this(store, policies, List.of());
    }

    /**
     * Binds {@code policies} to {@code store}, telling {@code listeners} about every decision (with
     * who made it), every refusal and every store error the store reports.
     * @param store where state lives
     * @param policies the policies, with distinct names
     * @param listeners hear decisions, refusals and store errors, in order
     * @throws IllegalArgumentException when two policies share a name
     */
    public Throttler(
            ThrottleStore store, Collection<? extends Policy> policies, List<? extends ThrottleListener> listeners) {
        this(store, policies, Map.of(), listeners);
    }

    /**
     * Binds {@code policies} and their plans to {@code store}, telling {@code listeners} about every
     * decision. A plan overrides numbers of its policy: it is a policy of the same name and algorithm,
     * whose keys are the policy's own (a key that moves from one plan to another keeps what it used).
     * @param store where state lives
     * @param policies the policies, with distinct names
     * @param plans by policy name, each policy's plans by plan name; policies without plans may be left out
     * @param listeners hear decisions, refusals and store errors, in order
     * @throws IllegalArgumentException when two policies share a name, or a plan is not of its policy's
     * name and algorithm, or names no policy
     */
    public Throttler(
            ThrottleStore store,
            Collection<? extends Policy> policies,
            Map<String, ? extends Map<String, ? extends Policy>> plans,
            List<? extends ThrottleListener> listeners) {
        this(store, policies, plans, listeners, null);
    }

    /**
     * Binds {@code policies} and their plans to {@code store}, telling {@code listeners} about every
     * decision and letting {@code observer} see each decision while it is made (tracing).
     * @param store where state lives
     * @param policies the policies, with distinct names
     * @param plans by policy name, each policy's plans by plan name; policies without plans may be left out
     * @param listeners hear decisions, refusals and store errors, in order
     * @param observer sees each decision around the store's call, or null
     * @throws IllegalArgumentException when two policies share a name, or a plan is not of its policy's
     * name and algorithm, or names no policy
     */
    public Throttler(
            ThrottleStore store,
            Collection<? extends Policy> policies,
            Map<String, ? extends Map<String, ? extends Policy>> plans,
            List<? extends ThrottleListener> listeners,
            @Nullable DecisionObserver observer) {
        this.store = store;
        ThrottleListener[] heard = listeners.toArray(ThrottleListener[]::new);
        DecisionSource storeSource = DecisionSource.store(store.kind());
        ThrottleListener storeErrors = new StoreErrors(heard);
        Map<String, BoundPolicy> bound = new LinkedHashMap<>();
        for (Policy policy : policies) {
            if (bound.containsKey(policy.name())) {
                throw new IllegalArgumentException("two policies are named '" + policy.name() + "'");
            }
            Map<String, ? extends Policy> planned = plans.get(policy.name());
            bound.put(
                    policy.name(),
                    new BoundPolicy(
                            policy,
                            (planned != null) ? planned : Map.of(),
                            (numbers) -> store.limiter(numbers, storeErrors),
                            storeSource,
                            heard,
                            observer));
        }
        for (String name : plans.keySet()) {
            if (!bound.containsKey(name)) {
                throw new IllegalArgumentException(
                        "plans are given for '" + name + "', which is no policy; known: " + bound.keySet());
            }
        }
        this.bound = Collections.unmodifiableMap(bound);
        this.listeners = heard;
        store.onGivenBack((name, key) -> {
            BoundPolicy given = this.bound.get(name);
            if (given != null) {
                given.givenBack(key);
            }
        });
    }

    /**
     * Returns a policy bound to the store, for callers that use it on every call.
     * @param policy the policy's name
     * @return the bound policy
     * @throws IllegalArgumentException when no policy has that name
     */
    public BoundPolicy bound(String policy) {
        BoundPolicy bound = (policy != null) ? this.bound.get(policy) : null;
        if (bound == null) {
            throw new IllegalArgumentException("no policy named '" + policy + "'; known: " + this.bound.keySet());
        }
        return bound;
    }

    /**
     * Takes {@code cost} units for {@code key} under a plan of {@code policy} if allowed: the plan's
     * numbers over the policy's keys. A null, blank or unknown plan means the policy's base numbers
     * (see {@link BoundPolicy#plan(String)}).
     * @param policy the policy's name
     * @param plan the plan's name, or null
     * @param key the key (null or blank: the shared bucket)
     * @param cost units to take, at least 1
     * @return the decision
     * @throws IllegalArgumentException for an unknown policy or a cost below 1
     */
    public Decision tryAcquire(String policy, @Nullable String plan, @Nullable String key, int cost) {
        return bound(policy).plan(plan).tryAcquire(key, cost);
    }

    /**
     * Applies new numbers to a policy and its plans at run time. Keys keep their state; every call
     * that starts after this returns gets the new numbers, and no call gets some old and some new.
     * Each policy is bound through the store again ({@link ThrottleStore#limiter(Policy)}), which is
     * how a store learns of the change and drops what it keeps per policy.
     * @param policy the policy's new base numbers (its name says which policy)
     * @param plans its plans, by plan name (the plans it had and are not given are gone)
     * @throws IllegalArgumentException when no policy has that name, or the algorithm would change, or a
     * plan is not of the policy's name and algorithm
     */
    public void update(Policy policy, Map<String, ? extends Policy> plans) {
        BoundPolicy bound = bound(policy.name());
        if (!bound.policy().algorithm().equals(policy.algorithm())) {
            throw new IllegalArgumentException(
                    "policy '" + policy.name() + "' cannot change its algorithm at run time ("
                            + bound.policy().algorithm() + " to " + policy.algorithm()
                            + "): its keys' state would mean nothing");
        }
        Policy before = bound.policy();
        bound.update(policy, plans);
        for (ThrottleListener listener : this.listeners) {
            try {
                listener.onPolicyChanged(before, policy);
            } catch (RuntimeException ex) {
                // a listener's failure must not undo a change that is applied
            }
        }
    }

    /**
     * Returns a policy's plans as they apply now.
     * @param policy the policy's name
     * @return plan name to its numbers; empty when it has none
     * @throws IllegalArgumentException when no policy has that name
     */
    public Map<String, Policy> plans(String policy) {
        return bound(policy).plans();
    }

    /**
     * Takes one unit for {@code key} under {@code policy} if allowed.
     * @param policy the policy's name
     * @param key the key (null or blank: the shared bucket)
     * @return the decision
     */
    public Decision tryAcquire(String policy, @Nullable String key) {
        return tryAcquire(policy, key, 1);
    }

    /**
     * Takes {@code cost} units for {@code key} under {@code policy} if allowed. A cost above the
     * policy's {@link Policy#maxCost()} is refused with {@link Decision#neverAllowed(int)} and
     * touches no state.
     * @param policy the policy's name
     * @param key the key (null or blank: the shared bucket)
     * @param cost units to take, at least 1
     * @return the decision
     * @throws IllegalArgumentException for an unknown policy or a cost below 1
     */
    public Decision tryAcquire(String policy, @Nullable String key, int cost) {
        return bound(policy).tryAcquire(key, cost);
    }

    /**
     * Like {@link #tryAcquire(String, String, int)}, without blocking the calling thread (for
     * event-loop callers such as WebFlux): the store's {@link Limiter#tryAcquireAsync}.
     * @param policy the policy's name
     * @param key the key (null or blank: the shared bucket)
     * @param cost units to take, at least 1
     * @return the decision, when made
     * @throws IllegalArgumentException for an unknown policy or a cost below 1
     */
    public CompletionStage<Decision> tryAcquireAsync(String policy, @Nullable String key, int cost) {
        return bound(policy).tryAcquireAsync(key, cost);
    }

    /**
     * Like {@link #refund}, without blocking the calling thread.
     * @param policy the policy's name
     * @param key the key
     * @param cost units to give back
     * @return completes when done
     */
    public CompletionStage<Void> refundAsync(String policy, @Nullable String key, int cost) {
        return bound(policy).refundAsync(key, cost);
    }

    /**
     * Like {@link #reset}, without blocking the calling thread.
     * @param policy the policy's name
     * @param key the key
     * @return completes when done
     */
    public CompletionStage<Void> resetAsync(String policy, @Nullable String key) {
        return bound(policy).resetAsync(key);
    }

    /**
     * Takes {@code cost} units for {@code key} under {@code policy}, waiting up to {@code maxWait} for
     * the call's turn when it is over the limit now: the store reserves the earliest turn in one round
     * trip ({@link BoundPolicy#reserve}), and this thread sleeps until it comes, never polling. When
     * the turn would come later than {@code maxWait}, nothing is taken and the call is refused at
     * once, its {@link Decision#retryAfterMillis()} saying when it could pass. A thread interrupted
     * while it waits gives its turn back (so the next caller gets it), keeps its interrupt status and
     * is refused. A {@code maxWait} of zero is {@link #check}.
     * @param policy the policy's name
     * @param key the key (null or blank: the shared bucket)
     * @param cost units to take, at least 1
     * @param maxWait the longest to wait for a turn
     * @return the allowed decision, once the call may proceed ({@link Decision#waitMillis()} says how
     * long it waited for its turn)
     * @throws ThrottledException when refused, or interrupted while waiting
     * @throws IllegalArgumentException for an unknown policy, a cost below 1, a negative wait, or a
     * wait on a policy that takes none ({@link BoundPolicy#whyNoWait})
     */
    public Decision acquire(String policy, @Nullable String key, int cost, Duration maxWait) {
        BoundPolicy bound = bound(policy);
        Decision decision = bound.reserve(key, cost, maxWait);
        if (!decision.allowed()) {
            throw new ThrottledException(bound.policy(), decision);
        }
        Turns.await(bound, key, cost, decision);
        return decision;
    }

    /**
     * Like {@link #acquire(String, String, int, Duration)}, without blocking any thread: the stage
     * completes with the allowed decision when the call's turn comes (timed, never polled), or
     * exceptionally with a {@link ThrottledException} when refused. Cancelling the stage (or
     * completing it in any other way) before the turn comes gives the turn back.
     * @param policy the policy's name
     * @param key the key (null or blank: the shared bucket)
     * @param cost units to take, at least 1
     * @param maxWait the longest to wait for a turn
     * @return the allowed decision, when the call may proceed
     * @throws IllegalArgumentException as {@link #acquire(String, String, int, Duration)}
     */
    public CompletionStage<Decision> acquireAsync(String policy, @Nullable String key, int cost, Duration maxWait) {
        BoundPolicy bound = bound(policy);
        return Turns.acquireLater(bound, key, cost, bound.reserveAsync(key, cost, maxWait), Turns.Delayer.JDK);
    }

    /**
     * Like {@link #tryAcquire(String, String, int)}, but throws when refused.
     * @param policy the policy's name
     * @param key the key
     * @param cost units to take
     * @return the allowed decision
     * @throws ThrottledException when refused
     */
    public Decision check(String policy, @Nullable String key, int cost) {
        BoundPolicy bound = bound(policy);
        Decision decision = bound.tryAcquire(key, cost);
        if (!decision.allowed()) {
            throw new ThrottledException(bound.policy(), decision);
        }
        return decision;
    }

    /**
     * Takes a slot of a concurrency policy for {@code key}, or throws when every slot is in use; the
     * returned slot is released when closed, so that a try-with-resources block holds it exactly
     * while it runs: {@code try (var slot = throttler.enter("reports", user)) { ... }}.
     * @param policy the name of a {@link ConcurrencyPolicy}
     * @param key the key (null or blank: the shared bucket)
     * @return the slot, to close when the work ends
     * @throws ThrottledException when every slot of the key is in use
     * @throws IllegalArgumentException for an unknown policy, or one that is not a concurrency limit
     */
    public Slot enter(String policy, @Nullable String key) {
        BoundPolicy bound = bound(policy);
        if (!(bound.policy() instanceof ConcurrencyPolicy)) {
            throw new IllegalArgumentException("policy '" + policy + "' is a "
                    + bound.policy().algorithm() + " policy, not a concurrency limit: use check or tryAcquire");
        }
        return new Slot(bound, key, check(policy, key, 1));
    }

    /**
     * Like {@link #enter(String, String)}, waiting up to {@code maxWait} for a slot when every slot
     * is in use: the call takes the first slot released (by this instance at once, by another as soon
     * as the store hears of it, otherwise within {@link ConcurrencyPolicy#RETRY_HINT}). Interrupted
     * while it waits, it keeps its interrupt status and is refused.
     * @param policy the name of a {@link ConcurrencyPolicy}
     * @param key the key (null or blank: the shared bucket)
     * @param maxWait the longest to wait for a slot
     * @return the slot, to close when the work ends
     * @throws ThrottledException when no slot came free in time, or interrupted while waiting
     * @throws IllegalArgumentException for an unknown policy, one that is not a concurrency limit, or a
     * negative wait
     */
    public Slot enter(String policy, @Nullable String key, Duration maxWait) {
        BoundPolicy bound = bound(policy);
        if (!(bound.policy() instanceof ConcurrencyPolicy)) {
            throw new IllegalArgumentException("policy '" + policy + "' is a "
                    + bound.policy().algorithm() + " policy, not a concurrency limit: use acquire");
        }
        return new Slot(bound, key, acquire(policy, key, 1, maxWait));
    }

    /**
     * Charges a call whose cost is known only after it runs (tokens a model used, rows an export
     * returned) its estimate now, or throws when refused; the returned estimate is settled with the
     * actual cost once the call is done: {@code throttler.estimate("tokens", user, 500).settle(used)}.
     * The key may go into debt by at most the policy's {@link Policy#quota() quota}.
     * @param policy the name of a policy whose algorithm carries a debt (token-bucket, gcra, fixed-window)
     * @param key the key (null or blank: the shared bucket)
     * @param estimate units charged before the call, at least 1
     * @return the estimate, to settle with the actual cost
     * @throws ThrottledException when refused
     * @throws IllegalArgumentException for an unknown policy, a cost below 1, or a policy whose
     * algorithm carries no debt ({@link BoundPolicy#whyNoActualCost})
     * @throws UnsupportedOperationException when the store cannot charge after the call
     * ({@link ThrottleStore#chargesAfterTheCall()}); nothing is taken
     */
    public Estimate estimate(String policy, @Nullable String key, int estimate) {
        BoundPolicy bound = bound(policy);
        return estimate(policy, key, estimate, bound.policy().quota());
    }

    /**
     * Like {@link #estimate(String, String, int)}, with the most units the key may owe after the
     * call.
     * @param policy the name of a policy whose algorithm carries a debt
     * @param key the key (null or blank: the shared bucket)
     * @param estimate units charged before the call, at least 1
     * @param maxDebt the most units the key may owe after a call that cost more than its estimate
     * @return the estimate, to settle with the actual cost
     * @throws ThrottledException when refused
     * @throws IllegalArgumentException as {@link #estimate(String, String, int)}, or for a negative debt bound
     */
    public Estimate estimate(String policy, @Nullable String key, int estimate, int maxDebt) {
        BoundPolicy bound = bound(policy);
        String why = BoundPolicy.whyNoActualCost(bound.policy());
        if (why != null) {
            throw new IllegalArgumentException(
                    "policy '" + policy + "' cannot take a cost known after the call: " + why);
        }
        if (maxDebt < 0) {
            throw new IllegalArgumentException("maxDebt must not be negative, was " + maxDebt);
        }
        if (!this.store.chargesAfterTheCall()) {
            // said before the estimate is taken, not when the call is settled
            throw new UnsupportedOperationException(
                    "The " + this.store.kind() + " store cannot charge a cost known after the call");
        }
        return new Estimate(bound, key, estimate, maxDebt, check(policy, key, estimate));
    }

    /**
     * Gives back what an allowed call took (see {@link Limiter#refund}).
     * @param policy the policy's name
     * @param key the key
     * @param cost units to give back
     */
    public void refund(String policy, @Nullable String key, int cost) {
        bound(policy).refund(key, cost);
    }

    /**
     * Returns what a call of cost 1 would be told, without changing state.
     * @param policy the policy's name
     * @param key the key
     * @return the decision a call would get now
     */
    public Decision peek(String policy, @Nullable String key) {
        return bound(policy).peek(key);
    }

    /**
     * Forgets {@code key}'s state under {@code policy} (unlocks a user), saying whether the store did
     * (see {@link BoundPolicy#reset}).
     * @param policy the policy's name
     * @param key the key
     * @return true when the store forgot the key; false when a failure policy's store could not be
     * reached (the reset is then kept, and applied to the store when it answers again)
     */
    public boolean reset(String policy, @Nullable String key) {
        return bound(policy).reset(key);
    }

    /**
     * Returns a policy by name.
     * @param name the name
     * @return the policy
     * @throws IllegalArgumentException when no policy has that name
     */
    public Policy policy(String name) {
        return bound(name).policy();
    }

    /**
     * Returns every policy as it applies now (base numbers), in the order given.
     * @return name to policy, unmodifiable
     */
    public Map<String, Policy> policies() {
        Map<String, Policy> policies = new LinkedHashMap<>();
        this.bound.forEach((name, bound) -> policies.put(name, bound.policy()));
        return Collections.unmodifiableMap(policies);
    }

    /**
     * Returns the store.
     * @return the store
     */
    public ThrottleStore store() {
        return this.store;
    }
}
