package dev.throttle.memory;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import com.github.benmanes.caffeine.cache.Cache;

import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.TimeSource;

/**
 * A limiter whose per-key state fits in one {@code long}, held in an {@link AtomicLong} per key.
 *
 * <p>Concurrency: a decision reads the key's cell with {@link Cache#get} (no lock on a hit), computes
 * the next state as a pure function of (state, now, cost) and commits it with compare-and-set,
 * retrying on contention. A refusal writes nothing. So a decision allocates nothing but its
 * {@link Decision}, and no thread ever waits for another.
 *
 * <p>Packing: most algorithms keep a count and a time. The time is stored as milliseconds since
 * {@code base} (2^39 ms, about 17 years, before the store was created) in the low 40 bits, the
 * count in the next 23 bits; the sign bit stays clear, so {@link #EMPTY} and {@link #REJECTED}
 * can never be real states.
 */
abstract class PackedLimiter implements Limiter {

	/** The state of a key never used, or used so long ago that it is neutral again. */
	static final long EMPTY = Long.MIN_VALUE;

	/** Returned by {@link #acquire} when the call is refused. */
	static final long REJECTED = Long.MIN_VALUE + 1;

	private static final int TIME_BITS = 40;

	private static final long TIME_MASK = (1L << TIME_BITS) - 1;

	private static final Function<String, AtomicLong> NEW_CELL = (key) -> new AtomicLong(EMPTY);

	private final Policy policy;

	private final Cache<String, AtomicLong> cells;

	private final TimeSource clock;

	private final long base;

	PackedLimiter(Policy policy, Cache<String, AtomicLong> cells, TimeSource clock, long base) {
		this.policy = policy;
		this.cells = cells;
		this.clock = clock;
		this.base = base;
	}

	/** The next state after allowing {@code cost}, or {@link #REJECTED}. */
	abstract long acquire(long state, long now, int cost);

	/** The decision for an allowed call that produced {@code next}. */
	abstract Decision allowed(long next, long now);

	/** The decision for a refused call against {@code state}. */
	abstract Decision rejected(long state, long now, int cost);

	/** What a call of cost 1 would be told. */
	abstract Decision peek(long state, long now);

	/** The state after giving back {@code cost}. */
	abstract long refund(long state, long now, int cost);

	@Override
	public final Policy policy() {
		return this.policy;
	}

	@Override
	public final Decision tryAcquire(String key, int cost) {
		AtomicLong cell = this.cells.get(key, NEW_CELL);
		long now = this.clock.currentTimeMillis();
		for (;;) {
			long state = cell.get();
			long next = acquire(state, now, cost);
			if (next == REJECTED) {
				return rejected(state, now, cost);
			}
			if (cell.compareAndSet(state, next)) {
				return allowed(next, now);
			}
		}
	}

	@Override
	public final void refund(String key, int cost) {
		AtomicLong cell = this.cells.getIfPresent(key);
		if (cell == null) {
			return;
		}
		long now = this.clock.currentTimeMillis();
		for (;;) {
			long state = cell.get();
			if (state == EMPTY || cell.compareAndSet(state, refund(state, now, cost))) {
				return;
			}
		}
	}

	@Override
	public final Decision peek(String key) {
		AtomicLong cell = this.cells.getIfPresent(key);
		return peek((cell != null) ? cell.get() : EMPTY, this.clock.currentTimeMillis());
	}

	@Override
	public final void reset(String key) {
		AtomicLong cell = this.cells.getIfPresent(key);
		if (cell != null) {
			cell.set(EMPTY);
		}
	}

	final long pack(long count, long timeMillis) {
		long offset = Math.max(0, Math.min(TIME_MASK, timeMillis - this.base));
		return (count << TIME_BITS) | offset;
	}

	static int count(long state) {
		return (int) (state >>> TIME_BITS);
	}

	final long time(long state) {
		return this.base + (state & TIME_MASK);
	}

	static long ceilDiv(long dividend, long divisor) {
		return (dividend + divisor - 1) / divisor;
	}

}
