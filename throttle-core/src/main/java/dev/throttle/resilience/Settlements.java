package dev.throttle.resilience;

import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.TimeSource;
import java.lang.System.Logger.Level;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The settlements (refunds, resets, charges of a cost known after the call, and acquires a store asked
 * to have confirmed) that one store owes because it could not be reached when they
 * were made, shared by all the limiters of a {@link ResilientThrottleStore}: kept per policy, in the
 * order they were made, and applied to the store one after another when it answers again.
 *
 * <p>Bounded: at most {@link #MAX_OWED_PER_POLICY} per policy (beyond that the oldest is dropped,
 * with one WARN until the policy's settlements have been applied), and a settlement older than its
 * policy's {@link Policy#idleExpiry()} is dropped when its turn comes, since the state it settles has
 * expired by then anyway. Held in memory only: an instance that stops first takes them with it.
 *
 * <p>Lock-free; one drain at a time.
 */
final class Settlements {

    /** The most settlements kept per policy. */
    static final int MAX_OWED_PER_POLICY = 10_000;

    private static final System.Logger logger = System.getLogger(ResilientThrottleStore.class.getName());

    private final String store;

    private final TimeSource clock;

    /** Settlements owed, all policies together: the one number the decision path reads. */
    private final AtomicInteger owed = new AtomicInteger();

    private final Map<String, Owed> byPolicy = new ConcurrentHashMap<>();

    /** The drain in progress, or null. */
    private final AtomicReference<CompletableFuture<Integer>> draining = new AtomicReference<>();

    Settlements(String store, TimeSource clock) {
        this.store = store;
        this.clock = clock;
    }

    /**
     * Returns the settlements owed for {@code policy}, applied through {@code store} (the store's own
     * limiter of the policy). A policy bound again shares the first binding's.
     */
    Owed of(Policy policy, Limiter store) {
        Owed owed = this.byPolicy.get(policy.name());
        return (owed != null) ? owed : this.byPolicy.computeIfAbsent(policy.name(), (name) -> new Owed(policy, store));
    }

    /**
     * Whether nothing is owed: read on the decision path, so one volatile read.
     */
    boolean isEmpty() {
        return this.owed.get() == 0;
    }

    /**
     * Applies what is owed, oldest first, one settlement at a time, unless a drain is already running
     * (then returns that one). Completes with how many were applied once nothing is owed, or, at the
     * first that fails, exceptionally with the store's failure, keeping that one and the rest.
     */
    CompletableFuture<Integer> drain() {
        for (; ; ) {
            CompletableFuture<Integer> running = this.draining.get();
            if (running != null) {
                return running;
            }
            CompletableFuture<Integer> started = drainIfIdle();
            if (started != null) {
                return started;
            }
        }
    }

    /**
     * Like {@link #drain}, but only when no drain is running: then returns null, so that callers on
     * the decision path do not pile up on a running one.
     */
    CompletableFuture<Integer> drainIfIdle() {
        CompletableFuture<Integer> drain = new CompletableFuture<>();
        if (!this.draining.compareAndSet(null, drain)) {
            return null;
        }
        drain.whenComplete((applied, error) -> this.draining.compareAndSet(drain, null));
        next(drain, 0);
        return drain;
    }

    /** Applies settlements until one has to be waited for; continues when it completes. */
    private void next(CompletableFuture<Integer> drain, int applied) {
        int done = applied;
        for (; ; ) {
            Settlement settlement = null;
            Owed owed = null;
            for (Owed candidate : this.byPolicy.values()) {
                settlement = candidate.poll();
                if (settlement != null) {
                    owed = candidate;
                    break;
                }
            }
            if (settlement == null) {
                drain.complete(done);
                return;
            }
            if (owed.isMoot(settlement)) {
                owed.done();
                continue;
            }
            CompletableFuture<Void> applying;
            try {
                applying = owed.apply(settlement).toCompletableFuture();
            } catch (RuntimeException ex) {
                applying = CompletableFuture.failedFuture(ex);
            }
            Owed from = owed;
            Settlement current = settlement;
            if (!applying.isDone()) {
                int count = done;
                applying.whenComplete((ignored, error) -> {
                    if (error != null) {
                        from.putBack(current);
                        drain.completeExceptionally(unwrap(error));
                    } else {
                        from.done();
                        next(drain, count + 1);
                    }
                });
                return;
            }
            try {
                applying.join();
                owed.done();
                done++;
            } catch (RuntimeException ex) {
                from.putBack(current);
                drain.completeExceptionally(unwrap(ex));
                return;
            }
        }
    }

    private static Throwable unwrap(Throwable error) {
        return (error instanceof CompletionException && error.getCause() != null) ? error.getCause() : error;
    }

    /** What a settlement does to the key's state. */
    enum Kind {
        /** Gives back {@code cost}, by the receipt when not 0. */
        REFUND,
        /** Forgets the key. */
        RESET,
        /** Takes {@code cost} more into debt, at most the {@code receipt} field's number of units owed. */
        CHARGE,
        /**
         * Takes {@code cost} as a call does: an acquire allowed while the store could not confirm it
         * ({@link Limiter#keepsUnconfirmedAcquires()}), whatever the store decides now.
         */
        ACQUIRE
    }

    /**
     * One settlement owed to the store: a refund with its receipt, a reset, or a charge with its debt
     * bound (in {@code receipt}).
     */
    record Settlement(String key, int cost, long receipt, Kind kind, long madeAtMillis) {}

    /** One policy's settlements, oldest first. */
    final class Owed {

        private final Policy policy;

        private final Limiter store;

        private final long expiryMillis;

        private final ConcurrentLinkedDeque<Settlement> settlements = new ConcurrentLinkedDeque<>();

        private final AtomicInteger size = new AtomicInteger();

        /** Whether dropping the oldest has been logged since the policy last owed nothing. */
        private final AtomicBoolean overflowLogged = new AtomicBoolean();

        Owed(Policy policy, Limiter store) {
            this.policy = policy;
            this.store = store;
            this.expiryMillis = policy.idleExpiry().toMillis();
        }

        /**
         * Keeps a reset, a refund of what the store took (with the receipt of that call), or a charge
         * (with its debt bound), for the store.
         */
        void keep(String key, Kind kind, int cost, long receipt) {
            Settlement settlement =
                    new Settlement(key, cost, receipt, kind, Settlements.this.clock.currentTimeMillis());
            this.settlements.addLast(settlement);
            Settlements.this.owed.incrementAndGet();
            if (this.size.incrementAndGet() > MAX_OWED_PER_POLICY && poll() != null) {
                done();
                if (this.overflowLogged.compareAndSet(false, true)) {
                    logger.log(
                            Level.WARNING,
                            "Throttle store '" + Settlements.this.store + "' owes more than "
                                    + MAX_OWED_PER_POLICY + " refunds, resets, charges and acquires of policy '"
                                    + this.policy.name()
                                    + "' made while it could not be reached; the oldest are dropped");
                }
            }
        }

        /**
         * Takes the oldest settlement; the store owes it until {@link #done} (applied or moot), so that
         * a settlement made meanwhile still waits its turn behind it.
         */
        Settlement poll() {
            Settlement settlement = this.settlements.pollFirst();
            if (settlement != null && this.size.decrementAndGet() == 0) {
                this.overflowLogged.set(false);
            }
            return settlement;
        }

        /** One settlement taken by {@link #poll} is no longer owed. */
        void done() {
            Settlements.this.owed.decrementAndGet();
        }

        /** Puts back a settlement that the store failed, first in line again: still owed. */
        void putBack(Settlement settlement) {
            this.settlements.addFirst(settlement);
            this.size.incrementAndGet();
        }

        /** Whether the state the settlement settles has expired by now, so that applying it is moot. */
        boolean isMoot(Settlement settlement) {
            return Settlements.this.clock.currentTimeMillis() - settlement.madeAtMillis() >= this.expiryMillis;
        }

        CompletionStage<Void> apply(Settlement settlement) {
            return switch (settlement.kind()) {
                case RESET -> this.store.resetAsync(settlement.key());
                case REFUND -> this.store.refundAsync(settlement.key(), settlement.cost(), settlement.receipt());
                case CHARGE ->
                    this.store
                            .chargeAsync(settlement.key(), settlement.cost(), (int) settlement.receipt())
                            .thenApply((debt) -> null);
                case ACQUIRE ->
                    this.store
                            .tryAcquireAsync(settlement.key(), settlement.cost())
                            .thenApply((decision) -> null);
            };
        }
    }
}
