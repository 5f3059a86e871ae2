package dev.throttle.memory;

import com.github.benmanes.caffeine.cache.Cache;
import dev.throttle.Algorithm;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.ThrottleStore;
import dev.throttle.TimeSource;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Throttling state in this JVM's memory, bounded.
 *
 * <p>Each policy's keys live in their own Caffeine cache of at most {@code maximumKeysPerPolicy}
 * entries. An entry expires once it has been idle for the policy's {@link Policy#idleExpiry()} (and
 * two seconds): by then its state is neutral, so forgetting it changes no decision, and an idle key
 * costs nothing. Expiry follows the store's {@link TimeSource}, so a manual clock drives it in tests.
 *
 * <p>No key is ever evicted to make room: forgetting a key whose state is not neutral would hand it
 * a fresh quota, and a flood of distinct keys would buy a locked-out key its next guess. Instead,
 * while a policy holds its maximum of live keys, a key it does not hold is decided by the policy's
 * one shared overflow bucket (as keys that are null share one bucket): every such key is throttled
 * together, usually refused under a flood, until keys expire and make room. The keys the store holds
 * are decided as before, each until its own state is neutral.
 *
 * <p>Thread-safe and lock-free on the decision path: per-key state is an atomic cell committed
 * by compare-and-set (see {@code PackedLimiter}).
 *
 * <p>What a key's state means is each policy's {@link Algorithm}: the store runs the algorithm's
 * {@link dev.throttle.Transition} over the state it keeps, by the shape of that state alone.
 */
public final class MemoryThrottleStore implements ThrottleStore {

    /** Default bound on keys held per policy. */
    public static final long DEFAULT_MAXIMUM_KEYS = 1_000_000;

    private final TimeSource clock;

    private final long maximumKeysPerPolicy;

    private final Map<String, Bound> limiters = new ConcurrentHashMap<>();

    /**
     * Creates a store on the system clock holding at most {@link #DEFAULT_MAXIMUM_KEYS} keys per policy.
     */
    public MemoryThrottleStore() {
        this(TimeSource.system(), DEFAULT_MAXIMUM_KEYS);
    }

    /**
     * Creates a store.
     * @param clock the clock every decision reads
     * @param maximumKeysPerPolicy the most keys held per policy, at least 1
     */
    public MemoryThrottleStore(TimeSource clock, long maximumKeysPerPolicy) {
        if (maximumKeysPerPolicy < 1) {
            throw new IllegalArgumentException("maximum-keys must be at least 1, was " + maximumKeysPerPolicy);
        }
        this.clock = clock;
        this.maximumKeysPerPolicy = maximumKeysPerPolicy;
    }

    /**
     * Returns the limiter of {@code policy}. A policy bound again under other numbers (a plan, a
     * change at run time) gets a limiter of its own over the same keys, which keep their state; the
     * algorithm must stay the same.
     * @throws IllegalArgumentException when the policy's name is bound with another algorithm
     */
    @Override
    public Limiter limiter(Policy policy) {
        Bound bound = this.limiters.computeIfAbsent(policy.name(), (name) -> bind(policy));
        Limiter limiter = bound.byPolicy.get(policy);
        if (limiter != null) {
            return limiter;
        }
        synchronized (bound) {
            if (!bound.algorithm.equals(policy.algorithm())) {
                throw new IllegalArgumentException("policy '" + policy.name() + "' is already bound with another"
                        + " algorithm: " + bound.algorithm + ", not " + policy.algorithm());
            }
            return bound.byPolicy.computeIfAbsent(policy, (numbers) -> bound.cells.bind(policy));
        }
    }

    @Override
    public String kind() {
        return "memory";
    }

    @Override
    public boolean isNonBlocking() {
        return true;
    }

    /**
     * Returns how many keys the store holds now, across policies (an estimate, as Caffeine's is).
     * @return the number of keys
     */
    public long keyCount() {
        long count = 0;
        for (Bound bound : this.limiters.values()) {
            bound.cache.cleanUp();
            count += bound.cache.estimatedSize();
        }
        return count;
    }

    /**
     * Forgets every key of every policy: for tests that must start from a clean slate.
     */
    public void clear() {
        this.limiters.values().forEach((bound) -> bound.cells.clear());
    }

    private Bound bind(Policy policy) {
        MemoryCells cells = new MemoryCells(policy, this.clock, this.maximumKeysPerPolicy);
        Limiter limiter = cells.bind(policy);
        Map<Policy, Limiter> byPolicy = new ConcurrentHashMap<>();
        byPolicy.put(policy, limiter);
        return new Bound(cells.cache(), cells, policy.algorithm(), byPolicy);
    }

    /** A policy name's cells, and a limiter per policy bound under that name. */
    private record Bound(
            Cache<Object, ?> cache, MemoryCells cells, Algorithm<?> algorithm, Map<Policy, Limiter> byPolicy) {}
}
