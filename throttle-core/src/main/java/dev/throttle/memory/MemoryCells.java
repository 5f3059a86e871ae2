package dev.throttle.memory;

import java.time.Duration;
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
 * <p>Packing: most algorithms keep a count and a time per key. {@link #pack} stores the time's low
 * 40 bits (milliseconds modulo 2^40, about 35 years) and the count in the next 23 bits; the sign
 * bit stays clear, so {@link PackedTransition#EMPTY} and {@link PackedTransition#REJECTED} are
 * never packed states. {@link #time} reads the time back as the one nearest to now with those low
 * bits, so any time within 2^39 ms (about 17 years) of now is read exactly, however old the store
 * is: the 40 bits are never measured from the store's creation, so they cannot run out while it
 * lives (a JVM started with a clock years behind, corrected later, keeps every limit). Times further
 * than that from now never matter: every policy's state is neutral within ten years.
 *
 * <p>Bound once per policy, by one thread; the limiter it returns is thread-safe.
 */
public final class MemoryCells {

	/** The largest count a packed state holds. */
	public static final int MAX_COUNT = (1 << 23) - 1;

	private static final int TIME_BITS = 40;

	/**
	 * How much longer than the policy's idle expiry an entry is kept. Caffeine records an access
	 * only when the last recorded one is a second old or more, so an entry can expire up to a second
	 * before its last access plus its idle expiry: a key written then (a new window, a new rung)
	 * would be forgotten before its state is neutral, and get a fresh quota.
	 */
	static final Duration EXPIRY_MARGIN = Duration.ofSeconds(2);

	private static final long TIME_MASK = (1L << TIME_BITS) - 1;

	/** Half the range of the packed time: a packed time is read within this of now. */
	private static final long HALF_RANGE = 1L << (TIME_BITS - 1);

	private final Policy policy;

	private final TimeSource clock;

	private final long maximumKeys;

	private Cache<Object, ?> cache;

	/** Forgets the limiter's overflow cell (see {@link Room}). */
	private Runnable clearOverflow;

	MemoryCells(Policy policy, TimeSource clock, long maximumKeys) {
		this.policy = policy;
		this.clock = clock;
		this.maximumKeys = maximumKeys;
	}

	/**
	 * Returns the policy's limiter over one {@code long} per key.
	 * @param transition the algorithm's transition
	 * @return the limiter
	 */
	public Limiter packed(PackedTransition transition) {
		Cache<Object, PackedLimiter.Cell> cells = newCache();
		PackedLimiter limiter = new PackedLimiter(this.policy, cells, room(cells), this.clock, transition);
		this.clearOverflow = limiter::clearOverflow;
		return limiter;
	}

	/**
	 * Returns the policy's limiter over one immutable {@code long[]} per key.
	 * @param transition the algorithm's transition
	 * @return the limiter
	 */
	public Limiter array(ArrayTransition transition) {
		Cache<Object, AtomicReference<long[]>> cells = newCache();
		ArrayLimiter limiter = new ArrayLimiter(this.policy, cells, room(cells), this.clock, transition);
		this.clearOverflow = limiter::clearOverflow;
		return limiter;
	}

	/**
	 * Packs a count and a time into a state.
	 * @param count between 0 and {@link #MAX_COUNT}
	 * @param timeMillis the time; its low 40 bits are kept
	 * @return the state
	 */
	public long pack(long count, long timeMillis) {
		return (count << TIME_BITS) | (timeMillis & TIME_MASK);
	}

	/**
	 * Returns the time of a packed state: the time nearest to {@code now} whose low 40 bits the state
	 * holds, exact for any time within 2^39 ms (about 17 years) of now.
	 * @param state a state that {@link #pack} made
	 * @param now the time the state is read at
	 * @return the time in milliseconds
	 */
	public long time(long state, long now) {
		long ahead = ((state & TIME_MASK) - now) & TIME_MASK;
		return now + ((ahead >= HALF_RANGE) ? ahead - (1L << TIME_BITS) : ahead);
	}

	/**
	 * Returns the count of a packed state.
	 * @param state a state that {@link #pack} made
	 * @return the count
	 */
	public static int count(long state) {
		return (int) (state >>> TIME_BITS);
	}

	private Room room(Cache<Object, ?> cells) {
		return new Room(cells, this.maximumKeys, this.clock);
	}

	/**
	 * The cache of the cells: one per policy, idle entries expiring after the policy's idle expiry
	 * (and {@link #EXPIRY_MARGIN}) on the store's clock. It has no size bound of its own, which would
	 * evict keys whose state is not neutral yet: {@link Room} bounds it where keys come in.
	 */
	private <V> Cache<Object, V> newCache() {
		if (this.cache != null) {
			throw new IllegalStateException("policy '" + this.policy.name() + "' is already bound");
		}
		TimeSource clock = this.clock;
		Cache<Object, V> cache = Caffeine.newBuilder()
			.expireAfterAccess(this.policy.idleExpiry().plus(EXPIRY_MARGIN))
			.ticker(() -> clock.currentTimeMillis() * 1_000_000L)
			.build();
		this.cache = cache;
		return cache;
	}

	/** Forgets every key of the policy, and what its overflow cell holds. */
	void clear() {
		cache().invalidateAll();
		this.clearOverflow.run();
	}

	/** The cache the algorithm's limiter uses, for the store's key count and clear. */
	Cache<Object, ?> cache() {
		if (this.cache == null) {
			throw new IllegalStateException(this.policy.algorithm() + " bound policy '" + this.policy.name()
					+ "' without cells: its Algorithm.bind must return MemoryCells.packed(..) or array(..)");
		}
		return this.cache;
	}

}
