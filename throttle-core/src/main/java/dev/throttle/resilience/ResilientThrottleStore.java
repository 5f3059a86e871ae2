package dev.throttle.resilience;

import dev.throttle.DecisionSource;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.ThrottleListener;
import dev.throttle.ThrottleStore;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.BiConsumer;

/**
 * Any {@link ThrottleStore} with a failure policy: while the store cannot answer, calls are answered
 * by the {@link FailureMode} instead of failing. No call ever throws because of the store; how long
 * a call may wait is the wrapped store's own bound (the Redis store's timeout, say). It speaks only
 * the store SPI, so a store added later gets the same failure modes by being wrapped.
 *
 * <p>Outages: a failure that is not a timeout (the store refused, or answered with an error), or the
 * third call in a row that got no answer in time, starts an outage and logs one WARN; a call that
 * got no answer in time is answered by the failure mode either way. A failure counts as a timeout
 * when a {@link java.util.concurrent.TimeoutException} is among its causes. While an outage lasts,
 * every call is answered by the failure mode at once, without waiting for the store, and starts a
 * probe in the background unless one is already running: a read-only
 * {@link Limiter#peekAsync peekAsync} of the call's key. The first probe that succeeds applies what
 * the store is owed (below), then ends the outage with one INFO, and every call after it uses the
 * store again, with no restart.
 *
 * <p>Partitions: a store whose parts fail on their own says which part holds a key
 * ({@link Limiter#partition}: a Redis Cluster master). Each part then has its outages of its own, as
 * above: its own timeouts in a row (answers from another part do not reset them), its own probe, on
 * a key that lives on it, its own settlements owed, and its own WARN and INFO naming it; while one
 * part is down, its keys are answered by the failure mode and the others' keys still go to the
 * store. A part that no longer holds any key (its keys moved to another, a replica promoted in its
 * place) ends its outage at its next probe, which the other parts' calls start.
 *
 * <p>Settlements: a refund goes to whoever took the unit, told by the receipt of the call's decision
 * ({@link Limiter#refund(String, int, long)}): a unit the fallback allowed (during an outage) goes
 * back to the fallback, whenever it is refunded; a unit the store took goes back to the store. A
 * refund or a reset that the store is owed and cannot be given now (down, or failing the call) is
 * kept and applied to the store when it answers again, before it decides again, in the order made;
 * kept in memory, at most 10,000 per policy (the oldest dropped first), and dropped once older than
 * the policy's {@link Policy#idleExpiry()}, when the state it settles has expired anyway. A refund
 * whose call was sent but got no answer in time is not sent again (the store may have applied it,
 * and applied twice it would give back a unit nobody returned); a reset is. {@link Limiter#tryReset}
 * says whether the store was reached. A store's own receipts must stay below 2^62: the bit above
 * marks the fallback's.
 *
 * <p>Warm-up: {@link #warmUp} runs every policy's decision path against the store before the first
 * call (a cold JVM's first calls to a networked store can miss its timeout).
 *
 * <p>Reports: every operation that the store did not carry out (a decision, peek, refund or reset)
 * is reported to the listener the policy was bound with ({@link #limiter(Policy, ThrottleListener)},
 * as a {@link dev.throttle.Throttler} binds it) as {@link ThrottleListener#onStoreError}. Limiters
 * are {@link dev.throttle.SourcedLimiter}s: each decision says whether the store, the local store or
 * a fixed answer of the failure mode made it.
 *
 * <p>Failure modes per policy: {@link #ResilientThrottleStore(ThrottleStore, FailureMode, ThrottleStore,
 * TimeSource, Map)} takes a mode for some policies by name (a login lockout that fails closed while
 * an API limit fails to the local store); the others take the store's mode.
 *
 * <p>What the store refused stays refused: before any failure mode answers a call, the store's
 * limiter is asked for a refusal it remembers and knows to be still true
 * ({@link RememberedRefusals}: the Redis store's near cache, the jdbc store's memory of refusals), so
 * a key the store refused
 * before an outage is refused until its Retry-After, whatever the mode; the mode answers only for
 * keys nothing is known about. Such answers are sourced {@link DecisionSource#nearCache}.
 *
 * <p>{@link FailureMode#LOCAL} keeps a bounded memory store on this instance: during an outage each
 * instance enforces the policy on its own traffic; its state is not merged back into the store. A
 * reset clears both, so a user unlocked during normal operation is not locked again by stale local
 * state in a later outage, and one unlocked during an outage is unlocked on this instance at once.
 *
 * <p>Thread-safe and lock-free.
 */
public final class ResilientThrottleStore implements ThrottleStore {

    /** The Retry-After of a call refused by {@link FailureMode#CLOSED}. */
    public static final Duration CLOSED_RETRY_AFTER = Duration.ofSeconds(1);

    /** The listener of limiters bound without one. */
    private static final ThrottleListener NO_LISTENER = new ThrottleListener() {};

    private final ThrottleStore primary;

    private final FailureMode mode;

    private final ThrottleStore local;

    /** Failure modes of the policies that do not take {@link #mode}, by policy name. */
    private final Map<String, FailureMode> policyModes;

    private final DecisionSource storeSource;

    private final DecisionSource nearCacheSource;

    private final Fallback.Sources fallbackSources;

    /** The health of each partition of the store, and of the whole store. */
    private final StoreHealths healths;

    /**
     * Wraps {@code primary}; the age of what the store is owed is read on the system clock.
     * @param primary the store that decides while it can, such as the Redis store
     * @param mode what to answer while it cannot
     * @param local the store that decides in {@link FailureMode#LOCAL} (a bounded
     * {@link MemoryThrottleStore}); ignored, and may be null, for the other modes
     * @throws IllegalArgumentException when {@code primary} or {@code mode} is null, or
     * {@code local} is null in {@link FailureMode#LOCAL}
     */
    public ResilientThrottleStore(ThrottleStore primary, FailureMode mode, ThrottleStore local) {
        this(primary, mode, local, TimeSource.system());
    }

    /**
     * Wraps {@code primary}.
     * @param primary the store that decides while it can, such as the Redis store
     * @param mode what to answer while it cannot
     * @param local the store that decides in {@link FailureMode#LOCAL} (a bounded
     * {@link MemoryThrottleStore}); ignored, and may be null, for the other modes
     * @param clock the clock that tells when what the store is owed has expired (the application's
     * time source)
     * @throws IllegalArgumentException when {@code primary}, {@code mode} or {@code clock} is null, or
     * {@code local} is null in {@link FailureMode#LOCAL}
     */
    public ResilientThrottleStore(ThrottleStore primary, FailureMode mode, ThrottleStore local, TimeSource clock) {
        this(primary, mode, local, clock, Map.of());
    }

    /**
     * Wraps {@code primary}, with failure modes of their own for some policies.
     * @param primary the store that decides while it can, such as the Redis store
     * @param mode what to answer while it cannot, for policies not in {@code policyModes}
     * @param local the store that decides in {@link FailureMode#LOCAL} (a bounded
     * {@link MemoryThrottleStore}); may be null when no policy fails to it
     * @param clock the clock that tells when what the store is owed has expired
     * @param policyModes failure modes by policy name, overriding {@code mode}
     * @throws IllegalArgumentException when {@code primary}, {@code mode}, {@code clock} or
     * {@code policyModes} is null, or {@code local} is null while some policy fails to it
     */
    public ResilientThrottleStore(
            ThrottleStore primary,
            FailureMode mode,
            ThrottleStore local,
            TimeSource clock,
            Map<String, FailureMode> policyModes) {
        if (primary == null || mode == null || clock == null || policyModes == null) {
            throw new IllegalArgumentException("primary store, failure mode and clock are required");
        }
        boolean anyLocal = mode == FailureMode.LOCAL || policyModes.containsValue(FailureMode.LOCAL);
        if (anyLocal && local == null) {
            throw new IllegalArgumentException("failure-mode local needs a local store");
        }
        this.primary = primary;
        this.mode = mode;
        this.local = anyLocal ? local : null;
        this.policyModes = Map.copyOf(policyModes);
        this.storeSource = DecisionSource.store(primary.kind());
        this.nearCacheSource = DecisionSource.nearCache(primary.kind());
        this.fallbackSources = Fallback.Sources.of(primary.kind());
        this.healths = new StoreHealths(primary.kind(), mode.name().toLowerCase(Locale.ROOT), clock);
    }

    /**
     * Wraps {@code primary}, creating the local store for {@link FailureMode#LOCAL} on the system clock.
     * @param primary the store that decides while it can
     * @param mode what to answer while it cannot
     * @param localMaximumKeys the local store's bound per policy (as
     * {@code throttle.store.memory.maximum-keys}); used by {@link FailureMode#LOCAL} only
     * @return the wrapped store
     */
    public static ResilientThrottleStore of(ThrottleStore primary, FailureMode mode, long localMaximumKeys) {
        ThrottleStore local =
                (mode == FailureMode.LOCAL) ? new MemoryThrottleStore(TimeSource.system(), localMaximumKeys) : null;
        return new ResilientThrottleStore(primary, mode, local);
    }

    /**
     * Binds {@code policy} with no listener: store errors are not reported.
     */
    @Override
    public Limiter limiter(Policy policy) {
        return limiter(policy, NO_LISTENER);
    }

    /**
     * Binds {@code policy}; every operation of the limiter that the store does not carry out is
     * reported to {@code listener}. State lives in the wrapped stores, so every limiter of one policy
     * works on the same state.
     */
    @Override
    public Limiter limiter(Policy policy, ThrottleListener listener) {
        FailureMode policyMode = failureMode(policy.name());
        Limiter local = (policyMode == FailureMode.LOCAL) ? this.local.limiter(policy) : null;
        return new ResilientLimiter(
                policy,
                this.primary.limiter(policy),
                this.storeSource,
                this.nearCacheSource,
                Fallback.of(policyMode, policy, local, this.fallbackSources),
                this.healths,
                (listener != null) ? listener : NO_LISTENER);
    }

    /**
     * Returns the wrapped store's kind: the failure mode is not a store of its own.
     */
    @Override
    public String kind() {
        return this.primary.kind();
    }

    /**
     * Returns whether the wrapped store never blocks: the failure modes never do.
     */
    @Override
    public boolean chargesAfterTheCall() {
        return this.primary.chargesAfterTheCall();
    }

    @Override
    public boolean isNonBlocking() {
        return this.primary.isNonBlocking();
    }

    /** What the wrapped store hears of other instances; the local store stands in for this one only. */
    @Override
    public void onGivenBack(BiConsumer<String, String> listener) {
        this.primary.onGivenBack(listener);
    }

    /**
     * Returns the failure mode of the policies that have none of their own.
     * @return the mode
     */
    public FailureMode failureMode() {
        return this.mode;
    }

    /**
     * Returns the failure mode of a policy: its own, or the store's.
     * @param policy the policy's name
     * @return the mode
     */
    public FailureMode failureMode(String policy) {
        return this.policyModes.getOrDefault(policy, this.mode);
    }

    /**
     * Returns the wrapped store.
     * @return the store that decides while it can
     */
    public ThrottleStore store() {
        return this.primary;
    }

    /**
     * Returns whether an outage is in progress, of the whole store or of one of its partitions (a
     * Redis Cluster master): the last call to it failed and no probe has succeeded since.
     * @return whether the store, or a part of it, is considered down
     */
    public boolean isStoreDown() {
        return this.healths.isDown();
    }

    /**
     * Returns when the outage in progress started, on the wall clock: what a health report says. With
     * several partitions down, the one that went down first.
     * @return the outage's start, or empty while the store answers
     */
    public Optional<Instant> outageSince() {
        StoreHealth down = this.healths.firstDown();
        return Optional.ofNullable((down != null) ? down.downSince() : null);
    }

    /**
     * Returns what started the outage in progress: its message names the store (and its partition,
     * when it has several), the failure mode and the store's own error (never a key). With several
     * partitions down, the one that went down first.
     * @return the failure, or empty while the store answers
     */
    public Optional<StoreUnavailableException> outageCause() {
        StoreHealth down = this.healths.firstDown();
        return Optional.ofNullable((down != null) ? down.outageCause() : null);
    }

    /**
     * Runs the decision path of every policy against the store, to be called once before the first
     * call is taken (a server's first request): each policy's whole path, blocking and non-blocking,
     * in rounds, on a key that no caller can have, leaving nothing behind; done after three rounds in a
     * row in which the store answered every call within its own bound. Straight to the store: a slow
     * call here is no outage and no decision (listeners hear nothing). When the store did not answer by
     * {@code bound}, or refused (a failure that is not a timeout: no waiting for the bound then), an
     * outage starts, with its one WARN: the failure mode answers from the first call, and the first
     * probe that succeeds ends it.
     * @param policies the policies to warm up (the throttler's)
     * @param bound how long to keep trying (plus one call's own bound at most)
     * @return whether the store answered
     */
    public boolean warmUp(Collection<? extends Policy> policies, Duration bound) {
        long start = System.nanoTime();
        RuntimeException failure = new WarmUp(this.primary, policies).run(bound);
        if (failure == null) {
            return true;
        }
        String what = StoreHealth.isTimeout(failure)
                ? "no answer to its warm-up within " + bound.toMillis() + " ms"
                : "its warm-up failed after "
                        + Duration.ofNanos(System.nanoTime() - start).toMillis() + " ms";
        this.healths.whole().down(new StoreUnavailableException(what + ": " + failure.getMessage(), failure));
        return false;
    }

    @Override
    public void close() {
        try {
            this.primary.close();
        } finally {
            if (this.local != null) {
                this.local.close();
            }
        }
    }
}
