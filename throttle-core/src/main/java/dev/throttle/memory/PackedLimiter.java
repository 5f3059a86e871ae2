package dev.throttle.memory;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import com.github.benmanes.caffeine.cache.Cache;

import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.TimeSource;

import static dev.throttle.memory.PackedTransition.EMPTY;
import static dev.throttle.memory.PackedTransition.REJECTED;

/**
 * A limiter whose per-key state fits in one {@code long}, held in an {@link AtomicLong} per key;
 * what the state means is the algorithm's {@link PackedTransition}.
 *
 * <p>Concurrency: a decision reads the key's cell from the cache (no lock on a hit; see
 * {@link #cell}), computes the next state as a pure function of (state, now, cost) and commits it
 * with compare-and-set, retrying on contention. A refusal writes nothing. So a decision allocates
 * nothing but its {@link Decision}, and no thread ever waits for another.
 */
final class PackedLimiter implements Limiter {

	private static final Function<Object, Cell> NEW_CELL = (key) -> new Cell();

	private final Policy policy;

	private final Cache<Object, Cell> cells;

	private final com.github.benmanes.caffeine.cache.Policy<Object, Cell> quiet;

	private final TimeSource clock;

	private final PackedTransition transition;

	/** The cache's expire-after-access: the policy's idle expiry. */
	private final long idleMillis;

	/** How long reads of a key's cell may go unrecorded in the cache (see {@link #cell}). */
	private final long touchMillis;

	/** Whether a new key may be taken in. */
	private final Room room;

	/** Decides the keys that came while the policy was full (see {@link Room}). */
	private final Cell overflow = new Cell();

	PackedLimiter(Policy policy, Cache<Object, Cell> cells, Room room, TimeSource clock, PackedTransition transition) {
		this.policy = policy;
		this.cells = cells;
		this.room = room;
		this.quiet = cells.policy();
		this.clock = clock;
		this.transition = transition;
		this.idleMillis = policy.idleExpiry().toMillis();
		this.touchMillis = this.idleMillis / 4;
	}

	@Override
	public Policy policy() {
		return this.policy;
	}

	/**
	 * The key's cell, created when absent.
	 *
	 * <p>{@link Cache#get} records every access: a read-buffer write and an access-time write on the
	 * entry, shared by every thread deciding for that key, which on a hot key costs more than the
	 * decision itself. So the cell is looked up quietly ({@code getIfPresentQuietly}: the map lookup
	 * and the expiry check only) and accesses are recorded only when they matter:
	 * <ul>
	 * <li>a read is recorded when the cache last heard of the key a quarter of the idle expiry ago or
	 * more, so a key in use is never near its expiry;</li>
	 * <li>a write (an allowed call) is recorded when the entry's recorded access would otherwise
	 * expire before the new state is neutral again ({@link #allowedAndRecorded}), so no state is ever
	 * dropped before it is neutral, exactly as when every access was recorded.</li>
	 * </ul>
	 * A key the cache does not hold while the policy is full gets the overflow cell (see {@link Room}).
	 */
	private Cell cell(Object key, long now) {
		Cell cell = this.quiet.getIfPresentQuietly(key);
		if (cell != null && now - cell.touched < this.touchMillis && now >= cell.touched) {
			return cell;
		}
		if (cell == null && !this.room.hasRoom()) {
			return this.overflow;
		}
		cell = this.cells.get(key, NEW_CELL);
		cell.touched = now;
		return cell;
	}

	/**
	 * The decision for an allowed call, after recording the access in the cache when the entry would
	 * otherwise expire ({@code touched + idle}) before the new state is neutral
	 * ({@code now + resetAfter}).
	 */
	private Decision allowedAndRecorded(Object key, Cell cell, long next, long now) {
		Decision decision = this.transition.allowed(next, now);
		if (cell.touched + this.idleMillis < now + decision.resetAfterMillis()) {
			Cell current = this.cells.getIfPresent(key);
			if (current != null) {
				current.touched = now;
			}
		}
		return decision;
	}

	@Override
	public Decision tryAcquire(String given, int cost) {
		Object key = MemoryKeys.of(given);
		long now = this.clock.currentTimeMillis();
		Cell cell = cell(key, now);
		for (;;) {
			long state = cell.get();
			long next = this.transition.acquire(state, now, cost);
			if (next == REJECTED) {
				return this.transition.rejected(state, now, cost);
			}
			if (cell.compareAndSet(state, next)) {
				return allowedAndRecorded(key, cell, next, now);
			}
		}
	}

	@Override
	public void refund(String given, int cost) {
		Object key = MemoryKeys.of(given);
		Cell cell = this.cells.getIfPresent(key);
		if (cell == null) {
			return;
		}
		long now = this.clock.currentTimeMillis();
		for (;;) {
			long state = cell.get();
			if (state == EMPTY || cell.compareAndSet(state, this.transition.refund(state, now, cost))) {
				return;
			}
		}
	}

	@Override
	public void refund(String key, int cost, long receipt) {
		if (receipt == 0) {
			// a decision no store stamped: give back as a receipt-less refund does
			refund(key, cost);
			return;
		}
		Cell cell = this.cells.getIfPresent(MemoryKeys.of(key));
		if (cell == null) {
			return;
		}
		long now = this.clock.currentTimeMillis();
		for (;;) {
			long state = cell.get();
			if (state == EMPTY) {
				return;
			}
			long next = this.transition.refund(state, now, cost, receipt);
			if (next == state || cell.compareAndSet(state, next)) {
				return;
			}
		}
	}

	@Override
	public CompletionStage<Void> refundAsync(String key, int cost, long receipt) {
		// never blocks: the receipt must not be lost to the default, which refunds without it
		refund(key, cost, receipt);
		return CompletableFuture.completedFuture(null);
	}

	/** A key the cache does not hold is told what its next call would be: the overflow's, while full. */
	@Override
	public Decision peek(String given) {
		Object key = MemoryKeys.of(given);
		Cell cell = this.cells.getIfPresent(key);
		long state = (cell != null) ? cell.get() : this.room.hasRoom() ? EMPTY : this.overflow.get();
		return this.transition.peek(state, this.clock.currentTimeMillis());
	}

	/** Forgets what the keys that came while the policy was full took: for the store's clear. */
	void clearOverflow() {
		this.overflow.set(EMPTY);
	}

	@Override
	public void reset(String given) {
		Object key = MemoryKeys.of(given);
		Cell cell = this.cells.getIfPresent(key);
		if (cell != null) {
			cell.set(EMPTY);
		}
	}

	/**
	 * A key's packed state, and when the cache last recorded an access to it.
	 */
	static final class Cell extends AtomicLong {

		private static final long serialVersionUID = 1L;

		/**
		 * The clock (milliseconds) when an access was last recorded in the cache. A plain field: a
		 * stale read only records one access more.
		 */
		transient long touched;

		Cell() {
			super(EMPTY);
		}

	}

}
