package dev.throttle;

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * One policy of a {@link Throttler}, bound to its store: what a caller that uses the same policy
 * on every call (an annotated method, a URL rule) holds, so that no call looks the policy up by
 * name. Obtained from {@link Throttler#bound(String)}; a plan of the policy from {@link #plan(String)}.
 *
 * <p>The numbers it applies may change at run time ({@link Throttler#update}): each call reads them
 * once, all together, so it sees either the numbers before a change or those after, never a mix.
 * Keys keep their state across a change, and across the policy's plans, which share their keys.
 *
 * <p>Keys are normalized as {@link Throttler} describes; every decision is told to the
 * throttler's listeners. Thread-safe.
 */
public final class BoundPolicy {

    private static final System.Logger logger = System.getLogger(BoundPolicy.class.getName());

    /** The most unknown plan names warned about per policy, so that callers cannot fill the memory. */
    private static final int MAX_WARNED_PLANS = 100;

    private final PolicyBinding.Shared shared;

    /** The plan this applies, or null for the policy's base numbers. */
    private final @Nullable String plan;

    /** The day a month window starts on for this view's calls (a billing day), or 0 for the policy's own. */
    private final int anchorDay;

    /** This view under each anchor day asked for, by day; filled as asked, only in a view without one. */
    private final @Nullable AtomicReferenceArray<BoundPolicy> anchored;

    BoundPolicy(
            Policy policy,
            Map<String, ? extends Policy> plans,
            Function<Policy, Limiter> binder,
            DecisionSource storeSource,
            ThrottleListener[] listeners,
            @Nullable DecisionObserver observer) {
        this.shared = new PolicyBinding.Shared(policy.name(), binder, storeSource, listeners, observer);
        this.plan = null;
        this.anchorDay = 0;
        this.anchored = new AtomicReferenceArray<>(32);
        this.shared.base = this;
        this.shared.current = this.shared.bind(policy, plans);
    }

    private BoundPolicy(PolicyBinding.Shared shared, @Nullable String plan, int anchorDay) {
        this.shared = shared;
        this.plan = plan;
        this.anchorDay = anchorDay;
        this.anchored = (anchorDay == 0) ? new AtomicReferenceArray<>(32) : null;
    }

    /**
     * The numbers this applies now: one volatile read, a map lookup only for a plan, an array read
     * only for an anchor day.
     */
    private PolicyBinding.Numbers numbers() {
        PolicyBinding.Numbers base = this.shared.current;
        PolicyBinding.Numbers numbers = base;
        if (this.plan != null) {
            PolicyBinding.Numbers planned = base.plans.get(this.plan);
            numbers = (planned != null) ? planned : base;
        }
        return (this.anchorDay == 0) ? numbers : numbers.anchored(this.anchorDay, this.shared.binder);
    }

    /**
     * Returns the policy as it applies now: the plan's numbers for a plan (the base numbers when the
     * plan is no longer configured).
     * @return the policy
     */
    public Policy policy() {
        return numbers().policy;
    }

    /**
     * Returns the plan this applies.
     * @return the plan's name, or null for the policy's base numbers
     */
    public @Nullable String plan() {
        return this.plan;
    }

    /**
     * Returns the policy bound under a plan's numbers, over the same keys. A null or blank name is the
     * base numbers; so is a plan the policy does not have, which is logged (a WARN, once per name).
     * Cheap enough for every call: one map lookup, no allocation once a plan was asked for.
     * @param plan the plan's name, or null
     * @return the bound plan, or the bound policy itself for its base numbers
     */
    public BoundPolicy plan(@Nullable String plan) {
        if (plan == null) {
            return this.shared.base;
        }
        BoundPolicy view = this.shared.views.get(plan);
        if (view != null) {
            return view;
        }
        if (!this.shared.current.plans.containsKey(plan)) {
            warnUnlessBlank(plan);
            return this.shared.base;
        }
        return this.shared.views.computeIfAbsent(plan, (name) -> new BoundPolicy(this.shared, name, 0));
    }

    /**
     * Returns the policy bound with its month windows starting on a day of its own (a customer's
     * billing day), over the same keys: what a call whose customer is billed on the 15th uses, so that
     * their month runs from the 15th to the 15th while the policy's other callers keep its
     * {@code anchor-day}. A month shorter than the day starts on its last day. For a policy (or a
     * plan) whose window is not a calendar month, the numbers are the policy's own: a day has no
     * anchor. Under a plan, ask for the plan first ({@code plan("pro").anchorDay(15)}); asking for a
     * plan of the result forgets the day. Cheap enough for every call: an array read once a day was
     * asked for; the store binds at most 31 variants per plan, each as the numbers change.
     * @param day the day of the month, 1 to 31; 0 for the policy's own
     * @return the bound policy under that anchor day
     * @throws IllegalArgumentException for a day outside 0 to 31
     */
    public BoundPolicy anchorDay(int day) {
        if (day < 0 || day > 31) {
            throw new IllegalArgumentException(
                    "an anchor day is a day of the month, 1 to 31 (0 for the policy's own), was " + day);
        }
        BoundPolicy unanchored = (this.anchorDay == 0) ? this : plan(this.plan);
        if (day == 0) {
            return unanchored;
        }
        AtomicReferenceArray<BoundPolicy> views = unanchored.anchored;
        BoundPolicy view = views.get(day);
        if (view == null) {
            views.compareAndSet(day, null, new BoundPolicy(this.shared, unanchored.plan, day));
            view = views.get(day);
        }
        return view;
    }

    /**
     * Returns the anchor day this applies.
     * @return the day of the month its month windows start on, or 0 for the policy's own
     */
    public int anchorDay() {
        return this.anchorDay;
    }

    private void warnUnlessBlank(@Nullable String plan) {
        if (plan != null
                && !plan.isBlank()
                && this.shared.warned.size() < MAX_WARNED_PLANS
                && this.shared.warned.add(plan)) {
            logger.log(
                    System.Logger.Level.WARNING,
                    "throttle: policy ''{0}'' has no plan ''{1}'' (it has {2});"
                            + " such calls get the policy''s base numbers",
                    this.shared.name,
                    plan,
                    this.shared.current.plans.keySet());
        }
    }

    /**
     * Returns the policy's plans as they apply now.
     * @return plan name to its policy, in configuration order; empty when it has none
     */
    public Map<String, Policy> plans() {
        Map<String, Policy> plans = new LinkedHashMap<>();
        this.shared.current.plans.forEach((name, numbers) -> plans.put(name, numbers.policy));
        return Collections.unmodifiableMap(plans);
    }

    /**
     * Applies new numbers to the policy and its plans, binding each through the store again (so that
     * a store drops whatever it keeps per policy). Every call that starts after this returns sees all
     * of them. Keys keep their state.
     */
    void update(Policy policy, Map<String, ? extends Policy> plans) {
        synchronized (this.shared) {
            this.shared.current = this.shared.bind(policy, plans);
        }
    }

    /**
     * Takes {@code cost} units for {@code key} if allowed. A cost above the policy's
     * {@link Policy#maxCost()} is refused with {@link Decision#neverAllowed(int)} and touches no
     * state.
     * @param key the key (null or blank: the shared bucket)
     * @param cost units to take, at least 1
     * @return the decision
     * @throws IllegalArgumentException for a cost below 1
     */
    public Decision tryAcquire(@Nullable String key, int cost) {
        checkCost(cost);
        PolicyBinding.Numbers numbers = numbers();
        if (cost > numbers.policy.maxCost()) {
            return notify(numbers, key, numbers.neverAllowed, this.shared.storeSource, 0);
        }
        DecisionObserver observer = this.shared.observer;
        if (observer != null && observer.isObserving()) {
            return tryAcquireObserved(numbers, key, cost, observer);
        }
        if (this.shared.listeners.length == 0) {
            // nobody asks who decided, so not even a failure policy's limiter is asked to say it
            return numbers.limiter.tryAcquire(StoreKeys.of(key), cost);
        }
        long start = System.nanoTime();
        if (numbers.sourced != null) {
            SourcedDecision answer = numbers.sourced.tryAcquireSourced(StoreKeys.of(key), cost);
            return notify(numbers, key, answer.decision(), answer.source(), System.nanoTime() - start);
        }
        Decision decision = numbers.limiter.tryAcquire(StoreKeys.of(key), cost);
        return notify(numbers, key, decision, this.shared.storeSource, System.nanoTime() - start);
    }

    /**
     * Like {@link #tryAcquire}, without blocking the calling thread (for event-loop callers such
     * as WebFlux): the store's {@link Limiter#tryAcquireAsync}.
     * @param key the key (null or blank: the shared bucket)
     * @param cost units to take, at least 1
     * @return the decision, when made
     * @throws IllegalArgumentException for a cost below 1
     */
    public CompletionStage<Decision> tryAcquireAsync(@Nullable String key, int cost) {
        checkCost(cost);
        PolicyBinding.Numbers numbers = numbers();
        if (cost > numbers.policy.maxCost()) {
            return CompletableFuture.completedFuture(
                    notify(numbers, key, numbers.neverAllowed, this.shared.storeSource, 0));
        }
        DecisionObserver observer = this.shared.observer;
        if (observer != null && observer.isObserving()) {
            return tryAcquireObservedAsync(numbers, key, cost, observer);
        }
        if (this.shared.listeners.length == 0) {
            return numbers.limiter.tryAcquireAsync(StoreKeys.of(key), cost);
        }
        long start = System.nanoTime();
        if (numbers.sourced != null) {
            return numbers.sourced
                    .tryAcquireSourcedAsync(StoreKeys.of(key), cost)
                    .thenApply((answer) ->
                            notify(numbers, key, answer.decision(), answer.source(), System.nanoTime() - start));
        }
        return numbers.limiter
                .tryAcquireAsync(StoreKeys.of(key), cost)
                .thenApply((decision) ->
                        notify(numbers, key, decision, this.shared.storeSource, System.nanoTime() - start));
    }

    /** A decision seen by the observer: the store is called inside its scope, and who decided is always asked. */
    private Decision tryAcquireObserved(
            PolicyBinding.Numbers numbers, @Nullable String key, int cost, DecisionObserver observer) {
        DecisionObserver.Observed observed = observer.start(numbers.policy);
        long start = System.nanoTime();
        Decision decision;
        DecisionSource source;
        try (DecisionObserver.Scope scope = observed.openScope()) {
            if (numbers.sourced != null) {
                SourcedDecision answer = numbers.sourced.tryAcquireSourced(StoreKeys.of(key), cost);
                decision = answer.decision();
                source = answer.source();
            } else {
                decision = numbers.limiter.tryAcquire(StoreKeys.of(key), cost);
                source = this.shared.storeSource;
            }
        } catch (RuntimeException | Error ex) {
            observed.failed(ex, this.shared.storeSource);
            throw ex;
        }
        observed.decided(decision, source);
        return (this.shared.listeners.length == 0)
                ? decision
                : notify(numbers, key, decision, source, System.nanoTime() - start);
    }

    private CompletionStage<Decision> tryAcquireObservedAsync(
            PolicyBinding.Numbers numbers, @Nullable String key, int cost, DecisionObserver observer) {
        DecisionObserver.Observed observed = observer.start(numbers.policy);
        long start = System.nanoTime();
        CompletionStage<SourcedDecision> answer;
        // the store's call starts inside the scope, so that its client sees the decision as its parent
        try (DecisionObserver.Scope scope = observed.openScope()) {
            answer = (numbers.sourced != null)
                    ? numbers.sourced.tryAcquireSourcedAsync(StoreKeys.of(key), cost)
                    : numbers.limiter
                            .tryAcquireAsync(StoreKeys.of(key), cost)
                            .thenApply((decision) -> new SourcedDecision(decision, this.shared.storeSource));
        } catch (RuntimeException | Error ex) {
            observed.failed(ex, this.shared.storeSource);
            throw ex;
        }
        return answer.handle((sourced, error) -> {
            if (error != null) {
                observed.failed(error, this.shared.storeSource);
                throw (error instanceof CompletionException completion) ? completion : new CompletionException(error);
            }
            observed.decided(sourced.decision(), sourced.source());
            return (this.shared.listeners.length == 0)
                    ? sourced.decision()
                    : notify(numbers, key, sourced.decision(), sourced.source(), System.nanoTime() - start);
        });
    }

    /**
     * Takes {@code cost} units for {@code key} for the earliest turn within {@code maxWait}: a
     * reservation (see {@link Limiter#reserve}), in one store round trip. Allowed now, the decision is
     * as {@link #tryAcquire}'s; allowed for a later turn, its {@link Decision#waitMillis()} says how
     * long the caller must wait before it proceeds (what it costs is taken already; a caller that gives
     * the turn up refunds it with {@link #refund(String, int, Decision)}); refused, nothing is taken
     * and its {@link Decision#retryAfterMillis()} says when the same call could pass. Nothing here
     * waits: the caller does (see {@link Throttler#acquire}). A {@code maxWait} of zero is
     * {@link #tryAcquire}.
     * @param key the key (null or blank: the shared bucket)
     * @param cost units to take, at least 1
     * @param maxWait the longest the call may wait for its turn; at most ten years are used
     * @return the decision
     * @throws IllegalArgumentException for a cost below 1, a negative wait, or a wait on a policy
     * whose algorithm takes none ({@link Algorithm#takesWait()}) or that has several limits
     */
    public Decision reserve(@Nullable String key, int cost, Duration maxWait) {
        long maxWaitMillis = maxWaitMillis(maxWait);
        if (maxWaitMillis == 0) {
            return tryAcquire(key, cost);
        }
        checkCost(cost);
        PolicyBinding.Numbers numbers = numbers();
        checkWait(numbers.policy);
        if (cost > numbers.policy.maxCost()) {
            return notify(numbers, key, numbers.neverAllowed, this.shared.storeSource, 0);
        }
        if (numbers.policy.algorithm().waitsForARelease()) {
            AtomicLong lastCall = new AtomicLong();
            Decision decision = awaitSlot(numbers, StoreKeys.of(key), maxWaitMillis, lastCall);
            // the store's latency is its last answer's, not the wait's
            return notify(numbers, key, decision, this.shared.storeSource, lastCall.get());
        }
        long start = System.nanoTime();
        Decision decision = numbers.limiter.reserve(StoreKeys.of(key), cost, maxWaitMillis);
        return notify(numbers, key, decision, this.shared.storeSource, System.nanoTime() - start);
    }

    /**
     * Takes a concurrency slot, waiting for a release up to {@code maxWaitMillis} ({@link SlotWaits}).
     * Interrupted, it stops waiting (a slot taken meanwhile goes back), keeps the interrupt status and
     * answers a refusal.
     */
    private Decision awaitSlot(
            PolicyBinding.Numbers numbers, String storeKey, long maxWaitMillis, AtomicLong lastCall) {
        CompletableFuture<Decision> waiting = waitForSlot(numbers, storeKey, maxWaitMillis, lastCall);
        try {
            return waiting.get();
        } catch (InterruptedException ex) {
            waiting.cancel(false);
            Thread.currentThread().interrupt();
            long hint = ConcurrencyPolicy.RETRY_HINT.toMillis();
            return Decision.reject(numbers.policy.quota(), 0, hint, hint);
        } catch (ExecutionException ex) {
            Throwable cause = ex.getCause();
            if (cause instanceof RuntimeException runtime) {
                throw runtime;
            }
            if (cause instanceof Error error) {
                throw error;
            }
            throw new CompletionException(cause);
        }
    }

    private CompletableFuture<Decision> waitForSlot(
            PolicyBinding.Numbers numbers, String storeKey, long maxWaitMillis, AtomicLong lastCall) {
        Limiter limiter = numbers.limiter;
        return this.shared.slotWaits.await(
                limiter, storeKey, maxWaitMillis, (slotKey, taken) -> giveBackSlot(limiter, slotKey, taken), lastCall);
    }

    /** Gives back a slot a waiter took after its caller gave up, and tells the next waiter. */
    private void giveBackSlot(Limiter limiter, String slotKey, Decision taken) {
        limiter.refundAsync(slotKey, 1, taken)
                .whenComplete((done, failure) -> this.shared.slotWaits.givenBack(slotKey));
    }

    /**
     * Like {@link #reserve}, without blocking the calling thread: the store's {@link Limiter#reserveAsync}.
     * @param key the key (null or blank: the shared bucket)
     * @param cost units to take, at least 1
     * @param maxWait the longest the call may wait for its turn
     * @return the decision, when made
     * @throws IllegalArgumentException as {@link #reserve}
     */
    public CompletionStage<Decision> reserveAsync(@Nullable String key, int cost, Duration maxWait) {
        long maxWaitMillis = maxWaitMillis(maxWait);
        if (maxWaitMillis == 0) {
            return tryAcquireAsync(key, cost);
        }
        checkCost(cost);
        PolicyBinding.Numbers numbers = numbers();
        checkWait(numbers.policy);
        if (cost > numbers.policy.maxCost()) {
            return CompletableFuture.completedFuture(
                    notify(numbers, key, numbers.neverAllowed, this.shared.storeSource, 0));
        }
        if (numbers.policy.algorithm().waitsForARelease()) {
            AtomicLong lastCall = new AtomicLong();
            String storeKey = StoreKeys.of(key);
            CompletableFuture<Decision> waiting = waitForSlot(numbers, storeKey, maxWaitMillis, lastCall);
            CompletableFuture<Decision> told = new CompletableFuture<>();
            waiting.whenComplete((decision, failure) -> {
                if (failure != null) {
                    told.completeExceptionally(
                            (failure instanceof CompletionException) ? failure : new CompletionException(failure));
                    return;
                }
                boolean handedOn;
                try {
                    handedOn = told.complete(notify(numbers, key, decision, this.shared.storeSource, lastCall.get()));
                } catch (RuntimeException | Error ex) {
                    // a listener failed: the caller sees that failure as on every other path, and never
                    // holds the slot it would not know it had
                    told.completeExceptionally(new CompletionException(ex));
                    handedOn = false;
                }
                if (!handedOn && decision.allowed()) {
                    // the caller gave up (or never got it) just as a slot was taken for it: nobody would
                    // ever release it
                    giveBackSlot(numbers.limiter, storeKey, decision);
                }
            });
            // cancelling the caller's stage ends the wait (and gives back a slot taken meanwhile)
            told.whenComplete((decision, failure) -> {
                if (told.isCancelled()) {
                    waiting.cancel(false);
                }
            });
            return told;
        }
        long start = System.nanoTime();
        return numbers.limiter
                .reserveAsync(StoreKeys.of(key), cost, maxWaitMillis)
                .thenApply((decision) ->
                        notify(numbers, key, decision, this.shared.storeSource, System.nanoTime() - start));
    }

    private static long maxWaitMillis(Duration maxWait) {
        if (maxWait.isNegative()) {
            throw new IllegalArgumentException("maxWait must not be negative, was " + maxWait);
        }
        return (maxWait.compareTo(Duration.ofMillis(Checks.MAX_MILLIS)) > 0) ? Checks.MAX_MILLIS : maxWait.toMillis();
    }

    /**
     * Refuses a wait that the policy cannot take, as the starter refuses it at startup.
     * @param policy the policy
     * @throws IllegalArgumentException saying why it takes none
     */
    static void checkWait(Policy policy) {
        String why = whyNoWait(policy);
        if (why != null) {
            throw new IllegalArgumentException("policy '" + policy.name() + "' cannot wait: " + why);
        }
    }

    /**
     * Returns why a call of {@code policy} cannot wait for its turn, or null when it can.
     * @param policy the policy
     * @return the reason, as the end of a sentence; null when the policy takes a wait
     */
    public static @Nullable String whyNoWait(Policy policy) {
        if (!policy.algorithm().takesWait()) {
            return policy.algorithm().whyNoWait();
        }
        if (policy.severalLimits()) {
            return "a policy with several limits cannot reserve one turn that every limit keeps";
        }
        return null;
    }

    /**
     * Gives back what an allowed call took (see {@link Limiter#refund}). A cost below 1 gives
     * back nothing.
     * @param key the key
     * @param cost units to give back
     */
    public void refund(@Nullable String key, int cost) {
        if (cost >= 1) {
            // no call ever took more than maxCost, and a refund never goes past neutral anyway
            PolicyBinding.Numbers numbers = numbers();
            String storeKey = StoreKeys.of(key);
            numbers.limiter.refund(storeKey, Math.min(cost, numbers.policy.maxCost()));
            this.shared.slotWaits.givenBack(storeKey);
        }
    }

    /**
     * Like {@link #refund}, without blocking the calling thread.
     * @param key the key
     * @param cost units to give back
     * @return completes when done
     */
    public CompletionStage<Void> refundAsync(@Nullable String key, int cost) {
        if (cost < 1) {
            return CompletableFuture.completedFuture(null);
        }
        PolicyBinding.Numbers numbers = numbers();
        String storeKey = StoreKeys.of(key);
        return givenBackWhenDone(
                numbers.limiter.refundAsync(storeKey, Math.min(cost, numbers.policy.maxCost())), storeKey);
    }

    /**
     * Gives back exactly what one allowed call took, identified by the decision it got (see
     * {@link Limiter#refund(String, int, long)}): nothing once that is gone. Once per decision: a
     * key's state keeps no list of receipts, so a second refund of one decision may give back what
     * other calls hold (a GCRA turn).
     * @param key the key the call used
     * @param cost units the call took
     * @param taken the call's (allowed) decision
     */
    public void refund(@Nullable String key, int cost, Decision taken) {
        if (cost >= 1) {
            PolicyBinding.Numbers numbers = numbers();
            String storeKey = StoreKeys.of(key);
            try {
                numbers.limiter.refund(storeKey, Math.min(cost, numbers.policy.maxCost()), taken);
            } finally {
                // a waiter tries again even when the release failed: the store may have it after all
                this.shared.slotWaits.givenBack(storeKey);
            }
        }
    }

    /**
     * Releases a concurrency slot that {@code taken} took: without waiting for the store's answer
     * where the store decides calls in the order they were made ({@link Limiter#decidesInOrderMade()}),
     * so that the caller's next call, sent after it, finds the slot free; otherwise as
     * {@link #refund(String, int, Decision)}, blocking. A release that fails is the store's failure
     * policy's to report and keep, as for any refund.
     * @param key the key the slot was taken for
     * @param taken the decision that took it
     */
    void releaseSlot(@Nullable String key, Decision taken) {
        PolicyBinding.Numbers numbers = numbers();
        if (!numbers.limiter.decidesInOrderMade()) {
            refund(key, 1, taken);
            return;
        }
        refundAsync(key, 1, taken);
    }

    /**
     * Like {@link #refund(String, int, Decision)}, without blocking the calling thread.
     * @param key the key the call used
     * @param cost units the call took
     * @param taken the call's (allowed) decision
     * @return completes when done
     */
    public CompletionStage<Void> refundAsync(@Nullable String key, int cost, Decision taken) {
        if (cost < 1) {
            return CompletableFuture.completedFuture(null);
        }
        PolicyBinding.Numbers numbers = numbers();
        String storeKey = StoreKeys.of(key);
        return givenBackWhenDone(
                numbers.limiter.refundAsync(storeKey, Math.min(cost, numbers.policy.maxCost()), taken), storeKey);
    }

    /**
     * Settles a call whose cost is known only now: it was allowed by {@code taken}, charged
     * {@code estimate} units, and turned out to cost {@code actualCost}. A higher actual cost takes the
     * difference ({@link Limiter#charge}: never refused, into debt by at most {@code maxDebt} units); a
     * lower one gives the difference back by the call's receipt (nothing of what is gone already); an
     * equal one changes nothing. One store round trip, none when equal.
     * @param key the key the call used
     * @param estimate units the call was charged when it was allowed
     * @param taken the call's (allowed) decision
     * @param actualCost what the call cost, not negative
     * @param maxDebt the most units the key may owe after a charge, not negative
     * @return the units the key owes after a charge, 0 when nothing was charged, -1 when a failure
     * policy kept the charge for a store it could not reach
     * @throws IllegalArgumentException for a negative actual cost or debt bound, or a policy whose
     * algorithm carries no debt ({@link #whyNoActualCost})
     */
    public int settle(@Nullable String key, int estimate, Decision taken, long actualCost, int maxDebt) {
        PolicyBinding.Numbers numbers = numbers();
        long difference = difference(numbers.policy, estimate, actualCost, maxDebt);
        int debt = 0;
        if (difference > 0) {
            debt = numbers.limiter.charge(StoreKeys.of(key), units(difference), maxDebt);
        } else if (difference < 0) {
            refund(key, (int) -difference, taken);
        }
        return settled(numbers.policy, estimate, actualCost, debt, maxDebt);
    }

    /**
     * Like {@link #settle}, without blocking the calling thread.
     * @param key the key the call used
     * @param estimate units the call was charged when it was allowed
     * @param taken the call's (allowed) decision
     * @param actualCost what the call cost, not negative
     * @param maxDebt the most units the key may owe after a charge, not negative
     * @return completes with what {@link #settle} returns
     * @throws IllegalArgumentException as {@link #settle}
     */
    public CompletionStage<Integer> settleAsync(
            @Nullable String key, int estimate, Decision taken, long actualCost, int maxDebt) {
        PolicyBinding.Numbers numbers = numbers();
        long difference = difference(numbers.policy, estimate, actualCost, maxDebt);
        CompletionStage<Integer> debt;
        if (difference > 0) {
            debt = numbers.limiter.chargeAsync(StoreKeys.of(key), units(difference), maxDebt);
        } else if (difference < 0) {
            debt = refundAsync(key, (int) -difference, taken).thenApply((done) -> 0);
        } else {
            debt = CompletableFuture.completedFuture(0);
        }
        return debt.thenApply((owed) -> settled(numbers.policy, estimate, actualCost, owed, maxDebt));
    }

    /**
     * Tells the listeners, and says once per policy (at WARN) that a key reached its debt bound: a
     * call cost more than the key had left and the bound allowed, so what it cost beyond was not
     * charged. Returns the debt.
     */
    private int settled(Policy policy, int estimate, long actualCost, int debt, int maxDebt) {
        if (debt >= maxDebt && actualCost > estimate && this.shared.debtBoundReported.compareAndSet(false, true)) {
            logger.log(
                    System.Logger.Level.WARNING,
                    "A key of policy '" + policy.name() + "' reached its debt bound (max-debt " + maxDebt
                            + "): a call cost more than the key had left and the bound allows, and what it cost"
                            + " beyond was not charged (said once per policy)");
        }
        for (ThrottleListener listener : this.shared.listeners) {
            try {
                listener.onSettled(policy, estimate, actualCost, debt);
            } catch (RuntimeException ex) {
                // a listener's failure must not fail a settlement that is made
            }
        }
        return debt;
    }

    private static long difference(Policy policy, int estimate, long actualCost, int maxDebt) {
        String why = whyNoActualCost(policy);
        if (why != null) {
            throw new IllegalArgumentException(
                    "policy '" + policy.name() + "' cannot take a cost known after the call: " + why);
        }
        if (actualCost < 0) {
            throw new IllegalArgumentException("the actual cost of a call of policy '" + policy.name()
                    + "' must not be negative, was " + actualCost);
        }
        if (maxDebt < 0) {
            throw new IllegalArgumentException(
                    "the debt bound of policy '" + policy.name() + "' must not be negative, was " + maxDebt);
        }
        return actualCost - estimate;
    }

    /** A difference as units to charge: more than any policy holds is as much as an int holds. */
    private static int units(long difference) {
        return (int) Math.min(difference, Integer.MAX_VALUE);
    }

    /**
     * Returns why a call of {@code policy} cannot be charged a cost known after the call, or null
     * when it can.
     * @param policy the policy
     * @return the reason, as the end of a sentence; null when the policy takes an actual cost
     */
    public static @Nullable String whyNoActualCost(Policy policy) {
        return policy.algorithm().takesActualCost() ? null : policy.algorithm().whyNoActualCost();
    }

    /**
     * Returns what a call of cost 1 would be told, without changing state.
     * @param key the key
     * @return the decision a call would get now
     */
    public Decision peek(@Nullable String key) {
        return numbers().limiter.peek(StoreKeys.of(key));
    }

    /**
     * Forgets {@code key}'s state (unlocks a user), saying whether the store did (see
     * {@link Limiter#tryReset}): with a failure policy, false when the store could not be reached, so
     * that the key is forgotten only in the fallback for now and the store is reset when it answers
     * again. Never throws because of a failure policy's store; a store without one throws its
     * failure.
     * @param key the key
     * @return true when the store forgot the key; false when it could not be reached
     */
    public boolean reset(@Nullable String key) {
        String storeKey = StoreKeys.of(key);
        boolean forgotten = numbers().limiter.tryReset(storeKey);
        this.shared.slotWaits.givenBack(storeKey);
        return forgotten;
    }

    /**
     * Like {@link #reset}, without blocking the calling thread.
     * @param key the key
     * @return completes when done
     */
    public CompletionStage<Void> resetAsync(@Nullable String key) {
        String storeKey = StoreKeys.of(key);
        return givenBackWhenDone(numbers().limiter.resetAsync(storeKey), storeKey);
    }

    /**
     * Tells the calls waiting for a slot of {@code storeKey} that it was given back: by another
     * instance, as the store heard ({@link ThrottleStore#onGivenBack}).
     */
    void givenBack(String storeKey) {
        this.shared.slotWaits.givenBack(storeKey);
    }

    /** The stage, telling the calls waiting for a slot of the key once it is done. */
    private CompletionStage<Void> givenBackWhenDone(CompletionStage<Void> done, String storeKey) {
        return done.whenComplete((ignored, failure) -> this.shared.slotWaits.givenBack(storeKey));
    }

    private static void checkCost(int cost) {
        if (cost < 1) {
            throw new IllegalArgumentException("cost must be at least 1, was " + cost);
        }
    }

    private Decision notify(
            PolicyBinding.Numbers numbers,
            @Nullable String key,
            Decision decision,
            DecisionSource source,
            long storeNanos) {
        for (ThrottleListener listener : this.shared.listeners) {
            listener.onDecision(numbers.policy, decision, source, storeNanos);
            if (!decision.allowed()) {
                listener.onRejected(numbers.policy, key, decision);
            }
        }
        return decision;
    }
}
