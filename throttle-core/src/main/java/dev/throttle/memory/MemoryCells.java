package dev.throttle.memory;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.throttle.ArrayTransition;
import dev.throttle.Limiter;
import dev.throttle.PackedTransition;
import dev.throttle.Policy;
import dev.throttle.Rates;
import dev.throttle.TimeSource;
import dev.throttle.Transition;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One policy name's cells in the {@link MemoryThrottleStore}: the cache of a cell per key, the
 * bound on its keys ({@link Room}), and the {@link Rates} its states were written under. The store
 * maps a policy's {@link Transition} to a limiter over these cells by the shape of the transition's
 * state ({@link #limiter}): one {@code long} per key in an atomic cell, or one immutable
 * {@code long[]} swapped whole; the store keeps the cache, the cells and the compare-and-set loop,
 * and never learns which algorithm it runs.
 *
 * <p>A policy bound again under other numbers (a plan, a change at run time) gets a limiter of its
 * own over the same cells, so its keys keep their state.
 *
 * <p>Bound by one thread at a time (the store binds under its lock); the limiters it returns are
 * thread-safe.
 */
final class MemoryCells {

    /**
     * How much longer than the policy's idle expiry an entry is kept. Caffeine records an access
     * only when the last recorded one is a second old or more, so an entry can expire up to a second
     * before its last access plus its idle expiry: a key written then (a new window, a new rung)
     * would be forgotten before its state is neutral, and get a fresh quota.
     */
    static final Duration EXPIRY_MARGIN = Duration.ofSeconds(2);

    /** The policy being bound now. */
    private Policy policy;

    private final TimeSource clock;

    private final long maximumKeys;

    private final Rates rates;

    private Cache<Object, ?> cache;

    private Room room;

    private boolean packedCells;

    /** Forget the limiters' overflow cells (see {@link Room}). */
    private final List<Runnable> clearOverflow = new ArrayList<>();

    MemoryCells(Policy policy, TimeSource clock, long maximumKeys) {
        this.policy = policy;
        this.clock = clock;
        this.maximumKeys = maximumKeys;
        this.rates = new Rates(policy.name());
    }

    /**
     * Binds a policy of this name: the same name, any numbers. Called once per policy, never per decision.
     * @param policy the policy
     * @return its limiter over this name's cells
     */
    Limiter bind(Policy policy) {
        this.policy = policy;
        Transition transition = policy.algorithm().transitionOf(policy, this.rates);
        if (transition instanceof PackedTransition packed) {
            return packed(packed);
        }
        return array((ArrayTransition) transition);
    }

    private Limiter packed(PackedTransition transition) {
        Cache<Object, PackedLimiter.Cell> cells = cache(true);
        PackedLimiter limiter = new PackedLimiter(this.policy, cells, this.room, this.clock, transition);
        this.clearOverflow.add(limiter::clearOverflow);
        return limiter;
    }

    private Limiter array(ArrayTransition transition) {
        Cache<Object, AtomicReference<long[]>> cells = cache(false);
        ArrayLimiter limiter = new ArrayLimiter(this.policy, cells, this.room, this.clock, transition);
        this.clearOverflow.add(limiter::clearOverflow);
        return limiter;
    }

    /**
     * The cache of the cells: one per policy, idle entries expiring after the policy's idle expiry
     * (and {@link #EXPIRY_MARGIN}) on the store's clock. It has no size bound of its own, which would
     * evict keys whose state is not neutral yet: {@link Room} bounds it where keys come in.
     */
    @SuppressWarnings("unchecked")
    private <V> Cache<Object, V> cache(boolean packed) {
        Duration expiry = this.policy.idleExpiry().plus(EXPIRY_MARGIN);
        if (this.cache != null) {
            if (this.packedCells != packed) {
                throw new IllegalStateException("policy '" + this.policy.name()
                        + "' is bound again with an algorithm whose state has another shape: " + this.policy);
            }
            // the longest idle expiry of every binding, so that no binding's state is dropped early
            this.cache.policy().expireAfterAccess().ifPresent((access) -> {
                if (access.getExpiresAfter().compareTo(expiry) < 0) {
                    access.setExpiresAfter(expiry);
                }
            });
            return (Cache<Object, V>) this.cache;
        }
        TimeSource clock = this.clock;
        Cache<Object, V> cache = Caffeine.newBuilder()
                .expireAfterAccess(expiry)
                .ticker(() -> clock.currentTimeMillis() * 1_000_000L)
                .build();
        this.cache = cache;
        this.packedCells = packed;
        this.room = new Room(cache, this.maximumKeys, this.clock);
        return cache;
    }

    /** Forgets every key of the policy, and what its overflow cells hold. */
    void clear() {
        cache().invalidateAll();
        this.clearOverflow.forEach(Runnable::run);
    }

    /** The cache the algorithm's limiter uses, for the store's key count and clear. */
    Cache<Object, ?> cache() {
        if (this.cache == null) {
            throw new IllegalStateException("policy '" + this.policy.name() + "' is not bound");
        }
        return this.cache;
    }
}
