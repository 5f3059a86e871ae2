package dev.throttle.resilience;

import dev.throttle.Decision;
import dev.throttle.Limiter;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;

/**
 * Whether one store, or one partition of it ({@link Limiter#partition}: a Redis Cluster master), is in
 * an outage, shared by all the limiters of a {@link ResilientThrottleStore} ({@link StoreHealths}):
 * a failure that is not a timeout, or the {@value #TIMEOUTS_FOR_AN_OUTAGE}th timeout in a row, starts
 * an outage and logs one WARN; while it lasts, calls start a probe of the store (a write, as
 * decisions need) in the background, one at a time; the first probe that succeeds applies the settlements owed to the store
 * and then ends the outage with one INFO. Lock-free.
 */
final class StoreHealth {

    /**
     * How many calls in a row must get no answer in time to start an outage: one slow answer (a cold
     * path, a GC pause, a retransmitted packet) is not an outage.
     */
    static final int TIMEOUTS_FOR_AN_OUTAGE = 3;

    /** A probe whose store never answers is given up, so that a later call can start another. */
    private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(10);

    private static final System.Logger logger = System.getLogger(ResilientThrottleStore.class.getName());

    private final String store;

    private final String mode;

    /** The partition whose health this is, or null for the whole store. */
    private final @Nullable Object partition;

    /** Outages in progress in every partition of the store, this one's included. */
    private final AtomicInteger outages;

    /** The current outage, or null while the store answers. */
    private final AtomicReference<Outage> outage = new AtomicReference<>();

    /** Whether a probe of the store is running. */
    private final AtomicBoolean probing = new AtomicBoolean();

    /** Calls in a row that the store did not answer in time; 0 once one is answered. */
    private final AtomicInteger timeouts = new AtomicInteger();

    private final Settlements settlements;

    StoreHealth(String store, String mode, @Nullable Object partition, Settlements settlements, AtomicInteger outages) {
        this.store = store;
        this.mode = mode;
        this.partition = partition;
        this.settlements = settlements;
        this.outages = outages;
    }

    /** The settlements owed to this partition of the store (the whole store's, for the whole store). */
    Settlements settlements() {
        return this.settlements;
    }

    /** How logs and reports name what failed: the store, and the partition when there are several. */
    private String name() {
        return (this.partition == null) ? "'" + this.store + "'" : "'" + this.store + "' (" + this.partition + ")";
    }

    /** How logs name what the failure mode answers for. */
    private String scope() {
        return (this.partition == null) ? "" : " to its keys";
    }

    boolean isDown() {
        return this.outage.get() != null;
    }

    /**
     * Returns when the current outage started, on the wall clock (for reports: a health endpoint), or
     * null while the store answers.
     */
    @Nullable
    Instant downSince() {
        Outage current = this.outage.get();
        return (current != null) ? current.startedAt() : null;
    }

    /**
     * Returns what started the current outage, or null while the store answers.
     */
    @Nullable
    StoreUnavailableException outageCause() {
        Outage current = this.outage.get();
        return (current != null) ? current.unavailable() : null;
    }

    /**
     * Returns what to report for a call answered without trying the store.
     */
    StoreUnavailableException unavailable() {
        Outage current = this.outage.get();
        return (current != null)
                ? current.unavailable()
                : new StoreUnavailableException("throttle store " + name() + " is down", null);
    }

    /**
     * Counts a call that the store failed: starts an outage (unless one is in progress) when the
     * failure is not a timeout, or when it is the {@value #TIMEOUTS_FOR_AN_OUTAGE}th timeout in a row.
     * The message is the store's own, which names no key (the Redis store's says what failed and for
     * which policy).
     */
    void failed(RuntimeException error) {
        if (this.outage.get() == null
                && (!isTimeout(error) || this.timeouts.incrementAndGet() >= TIMEOUTS_FOR_AN_OUTAGE)) {
            down(error);
        }
    }

    /**
     * Starts an outage now unless one is in progress, whatever the failure.
     */
    void down(RuntimeException error) {
        if (this.outage.get() == null) {
            Outage started = new Outage(
                    System.nanoTime(),
                    Instant.now(),
                    new StoreUnavailableException(
                            "throttle store " + name() + " is down; failure-mode " + this.mode + " applies" + scope(),
                            error));
            // counted before it is set, so that a call answered by the failure mode finds the store
            // reported down
            this.outages.incrementAndGet();
            if (!this.outage.compareAndSet(null, started)) {
                this.outages.decrementAndGet();
            } else {
                logger.log(
                        Level.WARNING,
                        "Throttle store " + name() + " failed (" + error.getMessage() + "); failure-mode " + this.mode
                                + " applies" + scope() + " until it answers again");
            }
        }
    }

    /**
     * Counts a call that the store answered: the decision path's one cost when all is well is two
     * volatile reads. Starts applying what the store is owed, if anything (settlements that missed it
     * without an outage, or made while the last one was ending).
     */
    void answered() {
        if (this.timeouts.get() != 0) {
            this.timeouts.set(0);
        }
        if (!this.settlements.isEmpty()) {
            applyOwed();
        }
    }

    /**
     * Applies what the store is owed in the background, unless that is under way, counting a failure
     * as a failed call.
     */
    void applyOwed() {
        CompletableFuture<Integer> drain = this.settlements.drainIfIdle();
        if (drain != null) {
            drain.whenComplete((applied, error) -> {
                if (error != null) {
                    failed(asRuntime(error));
                }
            });
        }
    }

    /**
     * Whether a failure is a call that got no answer in time: a {@link TimeoutException} among its
     * causes (the Redis store's timeout, Reactor's, a future's).
     */
    static boolean isTimeout(Throwable error) {
        return causedBy(error, TimeoutException.class);
    }

    /**
     * Whether a failure is the caller's own thread interrupted while it waited (an
     * {@link InterruptedException} among its causes): the caller gave up, the store did not fail.
     */
    static boolean isInterrupt(Throwable error) {
        return causedBy(error, InterruptedException.class);
    }

    /** Whether an exception of {@code type} is among the failure's causes. */
    private static boolean causedBy(Throwable error, Class<? extends Throwable> type) {
        // a few levels are enough for any store's wrapping, and bound a chain that loops
        Throwable cause = error;
        for (int depth = 0; cause != null && depth < 10; depth++, cause = cause.getCause()) {
            if (type.isInstance(cause)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Starts a probe of the store unless one is running; never waits for it. The probe is what
     * decisions need, a write: the store's own non-blocking decision, of cost 1, on a key of its
     * own that no caller can name and no probe uses twice (so no cache of refusals can answer it).
     * A read would succeed on a Redis that is full or read-only and end an outage that every
     * decision then starts again. It is bounded as the store bounds its calls (and by
     * {@link #PROBE_TIMEOUT} at most).
     */
    void probe(Limiter store) {
        if (this.probing.get() || !this.probing.compareAndSet(false, true)) {
            return;
        }
        // on a thread of its own: the call that starts a probe is answered by the failure mode at once
        // and pays nothing for it (a networked store's first write after a failed connect spends a
        // while setting up its call before the call is even sent)
        CompletionStage<@Nullable Decision> probe = CompletableFuture.supplyAsync(
                        () -> {
                            String key = probeKey(store);
                            // null: the partition holds no keys any more (its slots moved to another node)
                            return (key != null) ? store.tryAcquireAsync(key, 1) : NO_KEYS;
                        },
                        StoreHealth::startProbeThread)
                .thenCompose((decision) -> decision);
        CompletableFuture<@Nullable Decision> bounded = new CompletableFuture<>();
        probe.whenComplete((decision, error) -> {
            if (error == null) {
                bounded.complete(decision);
            } else {
                bounded.completeExceptionally(error);
            }
        });
        // the store answered: what it is owed is applied before decisions use it again, so that a
        // reset made during the outage cannot clear what later decisions take
        AtomicBoolean moved = new AtomicBoolean();
        bounded.orTimeout(PROBE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
                .thenCompose((decision) -> {
                    moved.set(decision == null);
                    return this.settlements.drain();
                })
                .whenComplete((applied, error) -> {
                    if (error == null) {
                        recovered(applied, moved.get());
                    }
                    this.probing.set(false);
                });
    }

    /** A probe's answer when the partition holds no keys: nothing to ask the store. */
    private static final CompletionStage<@Nullable Decision> NO_KEYS = CompletableFuture.completedStage(null);

    /** How many keys a probe of a partition tries before it concludes that the partition holds none. */
    private static final int PROBE_KEY_TRIES = 100_000;

    /**
     * A probe key that lives on this health's partition; for the whole store, any. Null when none of
     * {@value #PROBE_KEY_TRIES} random keys does: the partition holds no keys now (a Redis Cluster
     * master replaced by its replica), and the store decides for its former keys elsewhere.
     */
    private @Nullable String probeKey(Limiter store) {
        if (this.partition == null) {
            return probeKey();
        }
        for (int i = 0; i < PROBE_KEY_TRIES; i++) {
            String key = probeKey();
            if (this.partition.equals(store.partition(key))) {
                return key;
            }
        }
        return null;
    }

    /** Probes are one at a time per store and only during an outage: a short-lived thread each is enough. */
    private static void startProbeThread(Runnable probe) {
        Thread thread = new Thread(probe, "throttle-store-probe");
        thread.setDaemon(true);
        thread.start();
    }

    /** A key that no caller can name (it starts with a NUL) and that no probe of any instance repeats. */
    private static String probeKey() {
        return "\u0000probe:" + Long.toHexString(ThreadLocalRandom.current().nextLong());
    }

    private void recovered(int applied, boolean moved) {
        this.timeouts.set(0);
        // only a probe ends an outage, one probe at a time, and nothing else replaces one in progress
        Outage ended = this.outage.get();
        if (ended != null) {
            long millis =
                    Duration.ofNanos(System.nanoTime() - ended.startNanos()).toMillis();
            String settled = (applied > 0)
                    ? "; " + applied + " refunds, resets, charges and acquires kept meanwhile applied to it"
                    : "";
            logger.log(
                    Level.INFO,
                    moved
                            ? "Throttle store " + name() + " holds none of its keys any more after " + millis
                                    + " ms (they moved to another part of the store)" + settled
                                    + "; decisions on them use the store again"
                            : "Throttle store " + name() + " answers again after " + millis + " ms" + settled
                                    + "; decisions use it again");
            // after the INFO, and reported over before it is over: a call that the store decides again
            // finds it logged and finds the store reported up
            this.outages.decrementAndGet();
            this.outage.set(null);
        }
    }

    private static RuntimeException asRuntime(Throwable error) {
        return (error instanceof RuntimeException runtime) ? runtime : new IllegalStateException(error);
    }

    private record Outage(long startNanos, Instant startedAt, StoreUnavailableException unavailable) {}
}
