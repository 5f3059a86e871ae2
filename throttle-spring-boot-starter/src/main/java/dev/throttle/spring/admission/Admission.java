package dev.throttle.spring.admission;

import dev.throttle.ConcurrencyPolicy;
import dev.throttle.Decision;
import dev.throttle.ThrottledException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The decision on one call, and the handle that settles it. {@link #decide} takes from each charge
 * of the call in order, one store round trip each; when one refuses (or the store fails), what the
 * earlier ones took is given back (each by its own decision's receipt) and the call is refused with
 * a {@link ThrottledException}: a refused call is charged nothing. An allowed call gets an
 * {@code Admission}, which the entry point ends exactly once, by the call's outcome:
 * <ul>
 * <li>{@link #succeeded()}: each reset-on-success policy clears its key, each count-failures policy
 * gives back exactly what this call took;</li>
 * <li>{@link #failed()}: the call keeps what it took;</li>
 * <li>{@link #refund()}: the call did not run after all (cancelled, never sent): everything it took
 * is given back.</li>
 * </ul>
 * Only the first of those acts; a later one does nothing, so an entry point may end a call on every
 * path it sees (return, exception, cancellation) without counting twice. Each has a non-blocking
 * form, for stores reached over the network from an event loop.
 *
 * <p>A concurrency policy's slot is held only while the call runs ({@link #releasesAtEnd()}): each
 * of the three endings releases it, by its decision's receipt, once, whatever the policy's
 * {@code count} says; an entry point whose call holds a slot must end it on every path. A call that
 * ran longer than the policy's lease lost its slot before it ended (another call may have taken
 * it): said once per policy at WARN. {@link #close()} ends a call that was not ended yet as failed,
 * so that a programmatic caller can hold a slot in a try-with-resources block.
 *
 * <p>One error policy: giving back and settling never turn a call into an error (the call was
 * refused, or it ran and succeeded: that stands); a failure is logged once, at WARN, naming the
 * policy and never the key (an e-mail or an IP address does not belong in a log).
 *
 * <p>Thread-safe: a call may be decided on one thread and settled on another.
 */
public final class Admission implements AutoCloseable {

    private static final Log logger = LogFactory.getLog(Admission.class);

    private static final AtomicIntegerFieldUpdater<Admission> SETTLED =
            AtomicIntegerFieldUpdater.newUpdater(Admission.class, "settled");

    private static final AtomicIntegerFieldUpdater<Admission> COSTED =
            AtomicIntegerFieldUpdater.newUpdater(Admission.class, "costed");

    private static final CompletionStage<Void> DONE = CompletableFuture.completedStage(null);

    private static final Admission NONE = new Admission(List.of(), new String[0], new Decision[0]);

    /** The concurrency policies whose calls outlived their lease, each said once. */
    private static final Set<String> OUTLIVED_LEASE = ConcurrentHashMap.newKeySet();

    private final List<Charge> charges;

    private final @Nullable String[] keys;

    private final Decision[] decisions;

    /** 0 until the call is ended by its outcome; 1 after. */
    private volatile int settled;

    /** 0 until the call's actual costs are settled; 1 after. */
    private volatile int costed;

    /** Which keys a success cleared, written before the settlement completes; null until one was. */
    private boolean @Nullable [] reset;

    /** When the call's turn comes ({@link System#nanoTime()}); 0 when it may proceed at once. */
    private final long turnAt;

    /** The charge whose turn comes last, when the call waits; -1 when it may proceed at once. */
    private final int waitsFor;

    /** Whether some charge holds a concurrency slot. */
    private final boolean releasesAtEnd;

    /** When the call was admitted ({@link System#nanoTime()}), to tell a call that outlived its lease; 0 without a slot. */
    private final long admittedAt;

    private Admission(List<Charge> charges, @Nullable String[] keys, Decision[] decisions) {
        this.charges = charges;
        this.keys = keys;
        this.decisions = decisions;
        // one pass over the charges: the longest wait, and the concurrency slots taken
        int last = -1;
        long longest = 0;
        boolean releases = false;
        for (int i = 0; i < decisions.length; i++) {
            long wait = decisions[i].waitMillis();
            if (wait > longest) {
                longest = wait;
                last = i;
            }
            if (charges.get(i).releasesAtEnd()) {
                releases = true;
                if (decisions[i].allowed()) {
                    SlotsInUse.taken(charges.get(i).policy().name());
                }
            }
        }
        this.waitsFor = last;
        this.turnAt = (last < 0) ? 0 : System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(longest);
        this.releasesAtEnd = releases;
        this.admittedAt = releases ? System.nanoTime() : 0;
    }

    /**
     * An admission that took nothing and settles nothing: a call that is not throttled (a safelisted
     * client's).
     * @return the empty admission
     */
    public static Admission none() {
        return NONE;
    }

    /**
     * Decides a call charged by one policy, blocking if the store does.
     * @param charge the charge
     * @param key the key (null or blank: the policy's shared bucket)
     * @return the admission, to end by the call's outcome
     * @throws ThrottledException when the policy refuses
     */
    public static Admission decide(Charge charge, @Nullable String key) {
        return decide(List.of(charge), new @Nullable String[] {key});
    }

    /**
     * Decides a call, blocking if the store does: takes from every charge in order.
     * @param charges the call's charges, in order
     * @param keys their keys, in the same order (null or blank: the policy's shared bucket)
     * @return the admission, to end by the call's outcome
     * @throws ThrottledException when a policy refuses (what the earlier ones took is given back)
     */
    public static Admission decide(List<Charge> charges, @Nullable String[] keys) {
        checkKeys(charges, keys);
        Decision[] decisions = new Decision[charges.size()];
        for (int i = 0; i < decisions.length; i++) {
            Charge charge = charges.get(i);
            Decision decision;
            try {
                // a policy in shadow mode never makes a call wait, as it never refuses one
                decision = (charge.waits() && !charge.shadow())
                        ? charge.bound().reserve(keys[i], charge.cost(), charge.waitLimit())
                        : charge.bound().tryAcquire(keys[i], charge.cost());
            } catch (RuntimeException | Error ex) {
                giveBack(charges, keys, decisions, i, true);
                throw ex;
            }
            if (!decision.allowed() && !charge.shadow()) {
                giveBack(charges, keys, decisions, i, true);
                throw new ThrottledException(charge.policy(), decision);
            }
            decisions[i] = decision;
        }
        return new Admission(charges, keys, decisions);
    }

    /**
     * Like {@link #decide(List, String[])}, without blocking: every decision through the store's
     * non-blocking API.
     * @param charges the call's charges, in order
     * @param keys their keys, in the same order
     * @return completes with the admission; fails with a {@link ThrottledException} when a policy
     * refuses (what the earlier ones took is given back), or with the store's exception
     */
    public static CompletionStage<Admission> decideAsync(List<Charge> charges, @Nullable String[] keys) {
        checkKeys(charges, keys);
        Decision[] decisions = new Decision[charges.size()];
        AtomicReference<@Nullable CompletableFuture<?>> waiting = new AtomicReference<>();
        CompletionStage<Void> taken = decideFrom(0, charges, keys, decisions, waiting);
        CompletableFuture<Admission> decided = new CompletableFuture<>();
        taken.whenComplete((done, error) -> {
            if (error != null) {
                decided.completeExceptionally(
                        (error instanceof CompletionException) ? error : new CompletionException(error));
                return;
            }
            Admission admission = new Admission(charges, keys, decisions);
            if (!decided.complete(admission)) {
                // the caller gave up while the store decided (a cancelled Mono): what it took goes back
                admission.refundAsync();
            }
        });
        decided.whenComplete((admission, error) -> {
            CompletableFuture<?> slot = waiting.get();
            if (decided.isCancelled() && slot != null) {
                // a call waiting for a concurrency slot stops waiting (a slot taken meanwhile goes back,
                // and so does what the call's earlier charges took)
                slot.cancel(false);
            }
        });
        return decided;
    }

    private static CompletionStage<Void> decideFrom(
            int index,
            List<Charge> charges,
            @Nullable String[] keys,
            Decision[] decisions,
            AtomicReference<@Nullable CompletableFuture<?>> waiting) {
        if (index == decisions.length) {
            return DONE;
        }
        Charge charge = charges.get(index);
        CompletionStage<Decision> decided = start(() -> (charge.waits() && !charge.shadow())
                ? charge.bound().reserveAsync(keys[index], charge.cost(), charge.waitLimit())
                : charge.bound().tryAcquireAsync(keys[index], charge.cost()));
        // only a wait for a slot is cancelled: a decision already sent to the store is let finish and given back
        waiting.set(
                (charge.waits() && charge.releasesAtEnd() && decided instanceof CompletableFuture<?> slot)
                        ? slot
                        : null);
        return decided.handle((decision, error) -> {
                    if (error != null) {
                        return giveBackAsync(charges, keys, decisions, index, true)
                                .thenCompose((done) -> Admission.<Void>failed(error));
                    }
                    if (!decision.allowed() && !charge.shadow()) {
                        return giveBackAsync(charges, keys, decisions, index, true)
                                .thenCompose((done) ->
                                        Admission.<Void>failed(new ThrottledException(charge.policy(), decision)));
                    }
                    decisions[index] = decision;
                    return decideFrom(index + 1, charges, keys, decisions, waiting);
                })
                .thenCompose(Function.identity());
    }

    private static void checkKeys(List<Charge> charges, @Nullable String[] keys) {
        if (keys.length != charges.size()) {
            throw new IllegalArgumentException("Expected " + charges.size() + " keys, got " + keys.length);
        }
    }

    /**
     * Returns how long the call must still wait for its turn before it proceeds: 0 for a call
     * allowed now; for one whose charges wait ({@link Charge#withWait}) and got a later turn, the time
     * until the last of their turns. What each charge costs is taken already; a caller that gives up
     * its turn ends the call with {@link #refund()} (or {@link #refundAsync()}), so that the next
     * caller gets it.
     * @return milliseconds, not negative
     */
    public long waitMillis() {
        if (this.waitsFor < 0) {
            return 0;
        }
        return Math.max(0, TimeUnit.NANOSECONDS.toMillis(this.turnAt - System.nanoTime() + 999_999));
    }

    /**
     * Returns {@link #waitMillis()} as a duration: how long an entry point that does not block
     * delays the call (with its own timer, such as Reactor's {@code Mono.delay}).
     * @return the time until the call's turn; zero when it may proceed now
     */
    public Duration untilTurn() {
        return Duration.ofMillis(waitMillis());
    }

    /**
     * Waits on the calling thread until the call's turn, when it has to wait at all: what an entry
     * point that runs the call on its own thread (a servlet request, a job) does before running it.
     * A thread interrupted while it waits gives back everything the call took ({@link #refund()}), keeps
     * its interrupt status, and the call is refused: a {@link ThrottledException} by the policy whose
     * turn it was waiting for, whose retry-after is the rest of the wait.
     * @return this admission, once the call may proceed
     * @throws ThrottledException when interrupted while waiting
     */
    public Admission awaitTurn() {
        if (this.waitsFor < 0) {
            return this;
        }
        try {
            for (long left = this.turnAt - System.nanoTime(); left > 0; left = this.turnAt - System.nanoTime()) {
                TimeUnit.NANOSECONDS.sleep(left);
            }
            return this;
        } catch (InterruptedException ex) {
            refund();
            Thread.currentThread().interrupt();
            throw gaveUp();
        }
    }

    /**
     * Returns the refusal of a call that gave up its turn (its waiter was cancelled or interrupted):
     * what an entry point that stops waiting answers, after {@link #refund()}.
     * @return a refusal by the policy whose turn the call was waiting for, its retry-after the rest of the wait
     */
    public ThrottledException gaveUp() {
        int index = Math.max(0, this.waitsFor);
        Charge charge = this.charges.get(index);
        Decision reserved = this.decisions[index];
        long left = Math.max(1, waitMillis());
        return new ThrottledException(
                charge.policy(),
                Decision.reject(reserved.limit(), 0, left, Math.max(left, reserved.resetAfterMillis())));
    }

    /**
     * Returns how many policies the call was charged by.
     * @return the number of charges
     */
    public int size() {
        return this.decisions.length;
    }

    /**
     * Returns one of the call's charges (with the plan and cost chosen for this call).
     * @param index the charge's position, in charging order
     * @return the charge
     */
    public Charge charge(int index) {
        return this.charges.get(index);
    }

    /**
     * Returns one charge's key.
     * @param index the charge's position, in charging order
     * @return the key
     */
    public @Nullable String key(int index) {
        return this.keys[index];
    }

    /**
     * Returns one charge's decision: allowed, or refused by a policy in shadow mode.
     * @param index the charge's position, in charging order
     * @return the decision
     */
    public Decision decision(int index) {
        return this.decisions[index];
    }

    /**
     * Whether a success cleared this charge's key, so that the key is neutral now
     * ({@link Charge#neutral()}) rather than as {@link #decision} says.
     * @param index the charge's position, in charging order
     * @return whether the key was reset
     */
    public boolean wasReset(int index) {
        boolean[] reset = this.reset;
        return reset != null && reset[index];
    }

    /**
     * Whether the call was ended already (by any of the ways to end it).
     * @return whether it is settled
     */
    public boolean isSettled() {
        return this.settled != 0;
    }

    /**
     * Whether a success changes state (some charge resets or refunds on success), so that the
     * call's outcome must be known.
     * @return whether a success is settled
     */
    public boolean settlesOnSuccess() {
        for (Charge charge : this.charges) {
            if (charge.settlesOnSuccess()) {
                return true;
            }
        }
        return false;
    }

    /**
     * Whether some charge holds a concurrency slot while the call runs, so that the call must be
     * ended on every path (success, failure, not run), not only on success.
     * @return whether ending the call releases a slot
     */
    public boolean releasesAtEnd() {
        return this.releasesAtEnd;
    }

    /**
     * Settles what the call actually cost, for the charges whose cost is known only after the call
     * (tokens a model used, rows an export returned), blocking if the store does: each charge whose
     * actual cost is given is charged the difference from what it took (into debt, at most
     * {@link Charge#maxDebt()}) or given back the difference by its decision's receipt, in one store
     * round trip. Once per call: a later call of this or {@link #settleCostsAsync} does nothing. Does
     * not end the call (see {@link #succeeded()}); a store's failure is logged, never thrown, and what
     * the call took stands.
     * @param actualCosts one per charge, in charging order: the actual cost, or -1 where the estimate stands
     * @throws IllegalArgumentException when there is not one actual cost per charge
     */
    public void settleCosts(long[] actualCosts) {
        if (!claimCosts(actualCosts)) {
            return;
        }
        for (int i = 0; i < this.decisions.length; i++) {
            if (costs(i, actualCosts)) {
                Charge charge = this.charges.get(i);
                try {
                    charge.bound()
                            .settle(this.keys[i], charge.cost(), this.decisions[i], actualCosts[i], charge.maxDebt());
                } catch (RuntimeException ex) {
                    costFailed(charge, ex);
                }
            }
        }
    }

    /**
     * Like {@link #settleCosts}, without blocking; the settlements run side by side.
     * @param actualCosts one per charge, in charging order: the actual cost, or -1 where the estimate stands
     * @return completes when every settlement is done; never fails
     */
    public CompletionStage<Void> settleCostsAsync(long[] actualCosts) {
        if (!claimCosts(actualCosts)) {
            return DONE;
        }
        CompletionStage<Void> all = DONE;
        for (int i = 0; i < this.decisions.length; i++) {
            if (costs(i, actualCosts)) {
                Charge charge = this.charges.get(i);
                String key = this.keys[i];
                Decision taken = this.decisions[i];
                long actual = actualCosts[i];
                CompletionStage<Void> done = start(
                                () -> charge.bound().settleAsync(key, charge.cost(), taken, actual, charge.maxDebt()))
                        .handle((debt, error) -> {
                            if (error != null) {
                                costFailed(charge, error);
                            }
                            return null;
                        });
                all = both(all, done);
            }
        }
        return all;
    }

    private boolean claimCosts(long[] actualCosts) {
        if (actualCosts.length != this.charges.size()) {
            throw new IllegalArgumentException(
                    "Expected " + this.charges.size() + " actual costs, got " + actualCosts.length);
        }
        return this.decisions.length > 0 && COSTED.compareAndSet(this, 0, 1);
    }

    /** Whether charge {@code i} settles an actual cost: one is given, and the charge took something. */
    private boolean costs(int i, long[] actualCosts) {
        return actualCosts[i] >= 0
                && this.decisions[i].allowed()
                && !this.charges.get(i).releasesAtEnd();
    }

    private static void costFailed(Charge charge, Throwable ex) {
        logger.warn(
                "Could not settle the actual cost of a call of policy '"
                        + charge.policy().name() + "'; what the call was charged before it ran stands",
                ex);
    }

    private boolean claim() {
        return this.decisions.length > 0 && SETTLED.compareAndSet(this, 0, 1);
    }

    /**
     * Ends a call that succeeded, blocking if the store does: resets each reset-on-success policy's
     * key and gives back what each count-failures policy took. Never throws.
     */
    public void succeeded() {
        if (Thread.currentThread().isInterrupted()) {
            // a blocking store call fails at once on an interrupted thread, and the settlement
            // (a slot's release) would be lost: sent without blocking instead
            succeededAsync();
            return;
        }
        if (!claim()) {
            return;
        }
        for (int i = 0; i < this.decisions.length; i++) {
            Charge charge = this.charges.get(i);
            try {
                if (charge.releasesAtEnd()) {
                    release(i);
                } else if (charge.resetOnSuccess()) {
                    charge.bound().reset(this.keys[i]);
                    markReset(i);
                } else if (charge.refundOnSuccess() && this.decisions[i].allowed()) {
                    charge.bound().refund(this.keys[i], charge.cost(), this.decisions[i]);
                }
            } catch (RuntimeException ex) {
                settlementFailed(charge, ex);
            }
        }
    }

    /**
     * Like {@link #succeeded()}, without blocking; the settlements run side by side.
     * @return completes when every settlement is done; never fails
     */
    public CompletionStage<Void> succeededAsync() {
        if (!claim()) {
            return DONE;
        }
        CompletionStage<Void> all = DONE;
        for (int i = 0; i < this.decisions.length; i++) {
            Charge charge = this.charges.get(i);
            String key = this.keys[i];
            Decision taken = this.decisions[i];
            int index = i;
            if (charge.releasesAtEnd()) {
                all = both(all, releaseAsync(i));
            } else if (charge.resetOnSuccess()) {
                CompletionStage<Void> done =
                        start(() -> charge.bound().resetAsync(key)).thenRun(() -> markReset(index));
                all = both(all, logged(done, charge, Ending.SUCCEEDED));
            } else if (charge.refundOnSuccess() && taken.allowed()) {
                // a shadow policy's would-be refusal took nothing
                all = both(
                        all,
                        logged(
                                start(() -> charge.bound().refundAsync(key, charge.cost(), taken)),
                                charge,
                                Ending.SUCCEEDED));
            }
        }
        return all;
    }

    /**
     * Ends a call that failed, blocking if the store does: it keeps what it took, but for its
     * concurrency slots, which it releases. Never throws.
     */
    public void failed() {
        if (Thread.currentThread().isInterrupted()) {
            // as in succeeded(): a slot's release must not be lost to the thread's interrupt
            failedAsync();
            return;
        }
        if (claim() && this.releasesAtEnd) {
            for (int i = 0; i < this.decisions.length; i++) {
                if (this.charges.get(i).releasesAtEnd()) {
                    try {
                        release(i);
                    } catch (RuntimeException ex) {
                        releaseFailed(this.charges.get(i), ex);
                    }
                }
            }
        }
    }

    /**
     * Like {@link #failed()}, without blocking.
     * @return completes when every slot is released; never fails
     */
    public CompletionStage<Void> failedAsync() {
        if (!claim() || !this.releasesAtEnd) {
            return DONE;
        }
        CompletionStage<Void> all = DONE;
        for (int i = 0; i < this.decisions.length; i++) {
            if (this.charges.get(i).releasesAtEnd()) {
                all = both(all, releaseAsync(i));
            }
        }
        return all;
    }

    /**
     * Ends a call that was not ended yet as {@link #failed()}: what a try-with-resources block
     * around a call does when it leaves, so that a concurrency slot is released however the block
     * ends. A call already ended (by {@link #succeeded()}, say) is left as it is.
     */
    @Override
    public void close() {
        failed();
    }

    /** The slots a refund gives back leave this JVM's count, as a release's do. */
    private void countReleases() {
        if (this.releasesAtEnd) {
            for (int i = 0; i < this.decisions.length; i++) {
                if (this.charges.get(i).releasesAtEnd() && this.decisions[i].allowed()) {
                    SlotsInUse.released(this.charges.get(i).policy().name());
                }
            }
        }
    }

    /** Releases charge {@code i}'s slot by its decision's receipt (a shadow policy's refusal took none). */
    private void release(int i) {
        Decision taken = this.decisions[i];
        if (taken.allowed()) {
            Charge charge = this.charges.get(i);
            SlotsInUse.released(charge.policy().name());
            outlivedLease(charge);
            charge.bound().refund(this.keys[i], charge.cost(), taken);
        }
    }

    private CompletionStage<Void> releaseAsync(int i) {
        Decision taken = this.decisions[i];
        if (!taken.allowed()) {
            return DONE;
        }
        Charge charge = this.charges.get(i);
        String key = this.keys[i];
        SlotsInUse.released(charge.policy().name());
        outlivedLease(charge);
        return start(() -> charge.bound().refundAsync(key, charge.cost(), taken))
                .handle((ignored, error) -> {
                    if (error != null) {
                        releaseFailed(charge, unwrap(error));
                    }
                    return null;
                });
    }

    /** A call that ran longer than its lease lost its slot before it ended: said once per policy. */
    private void outlivedLease(Charge charge) {
        if (charge.policy() instanceof ConcurrencyPolicy slots
                && System.nanoTime() - this.admittedAt > slots.lease().toNanos()
                && OUTLIVED_LEASE.add(slots.name())) {
            logger.warn("A call throttled by concurrency policy '" + slots.name() + "' ran longer than its lease ("
                    + slots.lease() + "): its slot had freed itself before the call ended, so more calls than"
                    + " the limit may have run at once; raise throttle.policies." + slots.name()
                    + ".lease above the longest call (said once per policy)");
        }
    }

    private static void releaseFailed(Charge charge, Throwable ex) {
        logger.warn(
                "Could not release a slot of policy '" + charge.policy().name()
                        + "'; it frees itself when its lease runs out",
                ex);
    }

    /**
     * Ends a call that did not run after all, blocking if the store does: everything it took is
     * given back, by each decision's receipt. Never throws.
     */
    public void refund() {
        if (Thread.currentThread().isInterrupted()) {
            // as in succeeded(): what the call took must not be kept for the thread's interrupt
            refundAsync();
            return;
        }
        if (claim()) {
            countReleases();
            giveBack(this.charges, this.keys, this.decisions, this.decisions.length, false);
        }
    }

    /**
     * Like {@link #refund()}, without blocking.
     * @return completes when everything is given back; never fails
     */
    public CompletionStage<Void> refundAsync() {
        if (!claim()) {
            return DONE;
        }
        countReleases();
        return giveBackAsync(this.charges, this.keys, this.decisions, this.decisions.length, false);
    }

    private synchronized void markReset(int index) {
        // settlements of one call may complete on different threads; never on a store's I/O path
        boolean[] reset = this.reset;
        if (reset == null) {
            reset = new boolean[this.decisions.length];
            this.reset = reset;
        }
        reset[index] = true;
    }

    private static void giveBack(
            List<Charge> charges, @Nullable String[] keys, Decision[] taken, int count, boolean refused) {
        for (int i = 0; i < count; i++) {
            Charge charge = charges.get(i);
            if (taken[i] == null || !taken[i].allowed()) {
                continue;
            }
            try {
                charge.bound().refund(keys[i], charge.cost(), taken[i]);
            } catch (RuntimeException ex) {
                giveBackFailed(charge, ex, refused);
            }
        }
    }

    /** Gives back side by side; the returned stage never fails. */
    private static CompletionStage<Void> giveBackAsync(
            List<Charge> charges, @Nullable String[] keys, Decision[] taken, int count, boolean refused) {
        CompletionStage<Void> all = DONE;
        for (int i = 0; i < count; i++) {
            Charge charge = charges.get(i);
            String key = keys[i];
            Decision decision = taken[i];
            if (decision == null || !decision.allowed()) {
                continue;
            }
            all = both(
                    all,
                    logged(
                            start(() -> charge.bound().refundAsync(key, charge.cost(), decision)),
                            charge,
                            refused ? Ending.REFUSED : Ending.NOT_RUN));
        }
        return all;
    }

    private static CompletionStage<Void> logged(CompletionStage<Void> settlement, Charge charge, Ending ending) {
        return settlement.handle((ignored, error) -> {
            if (error != null) {
                if (ending == Ending.SUCCEEDED) {
                    settlementFailed(charge, unwrap(error));
                } else {
                    giveBackFailed(charge, unwrap(error), ending == Ending.REFUSED);
                }
            }
            return null;
        });
    }

    private static void settlementFailed(Charge charge, Throwable ex) {
        logger.warn(
                "Could not " + (charge.resetOnSuccess() ? "reset" : "refund") + " policy '"
                        + charge.policy().name() + "' after a successful call; the call's result stands",
                ex);
    }

    private static void giveBackFailed(Charge charge, Throwable ex, boolean refused) {
        logger.warn(
                "Could not give back what policy '" + charge.policy().name() + "' took for a call that "
                        + (refused
                                ? "a later policy refused; the refusal stands"
                                : "did not run; what it took stays taken"),
                ex);
    }

    /** How a call ended, for what a settlement that fails says. */
    private enum Ending {
        SUCCEEDED,
        REFUSED,
        NOT_RUN
    }

    /** A store call that throws before it returns its stage fails like one whose stage fails. */
    private static <T> CompletionStage<T> start(StoreCall<T> call) {
        try {
            return call.start();
        } catch (RuntimeException ex) {
            return failed(ex);
        }
    }

    private static CompletionStage<Void> both(CompletionStage<Void> first, CompletionStage<Void> second) {
        return (first == DONE) ? second : first.thenCombine(second, (a, b) -> null);
    }

    /** A failure is seen as the store's exception, never wrapped in a {@link CompletionException}. */
    private static <T> CompletionStage<T> failed(Throwable error) {
        return CompletableFuture.failedStage(unwrap(error));
    }

    private static Throwable unwrap(Throwable error) {
        return (error instanceof CompletionException && error.getCause() != null) ? error.getCause() : error;
    }

    @FunctionalInterface
    private interface StoreCall<T> {

        CompletionStage<T> start();
    }
}
