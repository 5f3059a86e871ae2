package dev.throttle.memory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
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
 * <p>One policy name's cells: a policy bound again under other numbers (a plan, a change at run
 * time) gets a limiter of its own over the same cells, so its keys keep their state. An algorithm
 * whose state depends on a number of the policy (GCRA's interval) keeps, with the state, the
 * {@link #rateId id} of the number it was written under.
 *
 * <p>Bound by one thread at a time (the store binds under its lock); the limiters it returns are
 * thread-safe.
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

	/** The most numbers {@link #rateId} tells apart per policy name. */
	public static final int MAX_RATES = 4096;

	/** The policy being bound now. */
	private Policy policy;

	private final TimeSource clock;

	private final long maximumKeys;

	private Cache<Object, ?> cache;

	private Room room;

	private boolean packedCells;

	/** Forget the limiters' overflow cells (see {@link Room}). */
	private final List<Runnable> clearOverflow = new ArrayList<>();

	/** The numbers {@link #rateId} gave ids, by id: replaced, never changed, so reads need no lock. */
	private volatile long[] rates = new long[0];

	MemoryCells(Policy policy, TimeSource clock, long maximumKeys) {
		this.policy = policy;
		this.clock = clock;
		this.maximumKeys = maximumKeys;
	}

	/** Sets the policy that the next {@link #packed} or {@link #array} binds: the same name, any numbers. */
	void rebinding(Policy policy) {
		this.policy = policy;
	}

	/**
	 * Returns the id of a number a packed state's meaning depends on (GCRA's interval), the same for
	 * equal numbers across every binding of the policy name. Called when binding, never per decision.
	 * @param rate the number
	 * @return its id, below {@link #MAX_RATES}
	 * @throws IllegalStateException when the policy name has had {@link #MAX_RATES} distinct numbers
	 */
	public synchronized int rateId(long rate) {
		long[] known = this.rates;
		for (int id = 0; id < known.length; id++) {
			if (known[id] == rate) {
				return id;
			}
		}
		if (known.length >= MAX_RATES) {
			throw new IllegalStateException("policy '" + this.policy.name() + "' has been bound with "
					+ MAX_RATES + " distinct rates, the most its state can tell apart");
		}
		long[] more = Arrays.copyOf(known, known.length + 1);
		more[known.length] = rate;
		this.rates = more;
		return known.length;
	}

	/**
	 * Returns the number that {@link #rateId} gave an id.
	 * @param id an id it returned
	 * @return the number
	 */
	public long rate(int id) {
		return this.rates[id];
	}

	/**
	 * Returns the policy's limiter over one {@code long} per key.
	 * @param transition the algorithm's transition
	 * @return the limiter
	 */
	public Limiter packed(PackedTransition transition) {
		Cache<Object, PackedLimiter.Cell> cells = cache(true);
		PackedLimiter limiter = new PackedLimiter(this.policy, cells, this.room, this.clock, transition);
		this.clearOverflow.add(limiter::clearOverflow);
		return limiter;
	}

	/**
	 * Returns the policy's limiter over one immutable {@code long[]} per key.
	 * @param transition the algorithm's transition
	 * @return the limiter
	 */
	public Limiter array(ArrayTransition transition) {
		Cache<Object, AtomicReference<long[]>> cells = cache(false);
		ArrayLimiter limiter = new ArrayLimiter(this.policy, cells, this.room, this.clock, transition);
		this.clearOverflow.add(limiter::clearOverflow);
		return limiter;
	}

	/**
	 * Returns the limiter of a policy with several limits: one {@code long} per limit in one
	 * immutable {@code long[]} per key, each limit decided by its own transition and all charged in
	 * one compare-and-set (see {@link dev.throttle.MultiLimitPolicy}).
	 * @param limits each limit's transition, in the policy's order
	 * @return the limiter
	 */
	public Limiter several(PackedTransition... limits) {
		return array(new SeveralTransition(limits));
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
			throw new IllegalStateException(this.policy.algorithm() + " bound policy '" + this.policy.name()
					+ "' without cells: its Algorithm.bind must return MemoryCells.packed(..) or array(..)");
		}
		return this.cache;
	}

}
