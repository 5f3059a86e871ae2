package dev.throttle.memory;

import java.util.concurrent.atomic.AtomicReference;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;

import dev.throttle.Algorithm;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.TimeSource;

/**
 * SPI for algorithms: one policy's cells in the {@link MemoryThrottleStore}, handed to the
 * policy's {@link Algorithm} when the store binds the policy. The algorithm chooses the shape of
 * its per-key state by the transition it plugs in ({@link #packed} or {@link #array}); the store
 * keeps the cache, the cells and the compare-and-set loop.
 *
 * <p>Packing: most algorithms keep a count and a time per key. {@link #pack} stores the time as
 * milliseconds since the store's base (2^39 ms, about 17 years, before the store was created) in
 * the low 40 bits, and the count in the next 23 bits; the sign bit stays clear, so
 * {@link PackedTransition#EMPTY} and {@link PackedTransition#REJECTED} are never packed states.
 *
 * <p>Bound once per policy, by one thread; the limiter it returns is thread-safe.
 */
public final class MemoryCells {

	private static final int TIME_BITS = 40;

	private static final long TIME_MASK = (1L << TIME_BITS) - 1;

	private final Policy policy;

	private final TimeSource clock;

	private final long base;

	private final long maximumKeys;

	private Cache<String, ?> cache;

	MemoryCells(Policy policy, TimeSource clock, long base, long maximumKeys) {
		this.policy = policy;
		this.clock = clock;
		this.base = base;
		this.maximumKeys = maximumKeys;
	}

	/**
	 * Returns the policy's limiter over one {@code long} per key.
	 * @param transition the algorithm's transition
	 * @return the limiter
	 */
	public Limiter packed(PackedTransition transition) {
		return new PackedLimiter(this.policy, newCache(), this.clock, transition);
	}

	/**
	 * Returns the policy's limiter over one immutable {@code long[]} per key.
	 * @param transition the algorithm's transition
	 * @return the limiter
	 */
	public Limiter array(ArrayTransition transition) {
		Cache<String, AtomicReference<long[]>> cells = newCache();
		return new ArrayLimiter(this.policy, cells, this.clock, transition);
	}

	/**
	 * Packs a count and a time into a state.
	 * @param count between 0 and 2^23 - 1
	 * @param timeMillis the time; clamped into the 40 bits around the store's base
	 * @return the state
	 */
	public long pack(long count, long timeMillis) {
		long offset = Math.max(0, Math.min(TIME_MASK, timeMillis - this.base));
		return (count << TIME_BITS) | offset;
	}

	/**
	 * Returns the time of a packed state.
	 * @param state a state that {@link #pack} made
	 * @return the time in milliseconds
	 */
	public long time(long state) {
		return this.base + (state & TIME_MASK);
	}

	/**
	 * Returns the count of a packed state.
	 * @param state a state that {@link #pack} made
	 * @return the count
	 */
	public static int count(long state) {
		return (int) (state >>> TIME_BITS);
	}

	/**
	 * The cache of the cells: one per policy, bounded, idle entries expiring after the policy's
	 * idle expiry on the store's clock.
	 */
	private <V> Cache<String, V> newCache() {
		if (this.cache != null) {
			throw new IllegalStateException("policy '" + this.policy.name() + "' is already bound");
		}
		TimeSource clock = this.clock;
		Cache<String, V> cache = Caffeine.newBuilder()
			.maximumSize(this.maximumKeys)
			.expireAfterAccess(this.policy.idleExpiry())
			.ticker(() -> clock.currentTimeMillis() * 1_000_000L)
			.build();
		this.cache = cache;
		return cache;
	}

	/** The cache the algorithm's limiter uses, for the store's key count and clear. */
	Cache<String, ?> cache() {
		if (this.cache == null) {
			throw new IllegalStateException(this.policy.algorithm() + " bound policy '" + this.policy.name()
					+ "' without cells: its Algorithm.bind must return MemoryCells.packed(..) or array(..)");
		}
		return this.cache;
	}

}
