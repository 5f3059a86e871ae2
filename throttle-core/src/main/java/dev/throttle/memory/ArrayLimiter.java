package dev.throttle.memory;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

import com.github.benmanes.caffeine.cache.Cache;

import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.TimeSource;

import static dev.throttle.memory.ArrayTransition.EMPTY;

/**
 * A limiter whose per-key state is an immutable {@code long[]} swapped by compare-and-set; what
 * the array means is the algorithm's {@link ArrayTransition}. A refusal writes nothing. A key that
 * comes while the policy is full is decided by the overflow cell (see {@link Room}).
 */
final class ArrayLimiter implements Limiter {

	private static final Function<Object, AtomicReference<long[]>> NEW_CELL = (key) -> new AtomicReference<>(EMPTY);

	private final Policy policy;

	private final Cache<Object, AtomicReference<long[]>> cells;

	private final TimeSource clock;

	private final ArrayTransition transition;

	/** Whether a new key may be taken in. */
	private final Room room;

	/** Decides the keys that came while the policy was full (see {@link Room}). */
	private final AtomicReference<long[]> overflow = new AtomicReference<>(EMPTY);

	ArrayLimiter(Policy policy, Cache<Object, AtomicReference<long[]>> cells, Room room, TimeSource clock,
			ArrayTransition transition) {
		this.policy = policy;
		this.cells = cells;
		this.room = room;
		this.clock = clock;
		this.transition = transition;
	}

	@Override
	public Policy policy() {
		return this.policy;
	}

	@Override
	public Decision tryAcquire(String given, int cost) {
		Object key = MemoryKeys.of(given);
		AtomicReference<long[]> cell = this.cells.getIfPresent(key);
		if (cell == null) {
			cell = this.room.hasRoom() ? this.cells.get(key, NEW_CELL) : this.overflow;
		}
		long now = this.clock.currentTimeMillis();
		for (;;) {
			long[] state = cell.get();
			long[] next = this.transition.acquire(state, now, cost);
			if (next == null) {
				return this.transition.rejected(state, now, cost);
			}
			if (cell.compareAndSet(state, next)) {
				return this.transition.allowed(next, now);
			}
		}
	}

	@Override
	public void refund(String given, int cost) {
		Object key = MemoryKeys.of(given);
		AtomicReference<long[]> cell = this.cells.getIfPresent(key);
		if (cell == null) {
			return;
		}
		long now = this.clock.currentTimeMillis();
		for (;;) {
			long[] state = cell.get();
			if (state.length == 0 || cell.compareAndSet(state, this.transition.refund(state, now, cost))) {
				return;
			}
		}
	}

	@Override
	public void refund(String key, int cost, long receipt) {
		if (receipt == 0) {
			refund(key, cost);
			return;
		}
		giveBack(key, (state, now) -> this.transition.refund(state, now, cost, receipt));
	}

	@Override
	public void refund(String key, int cost, Decision taken) {
		giveBack(key, (state, now) -> this.transition.refund(state, now, cost, taken));
	}

	/** Applies a refund to a key this store holds, until its compare-and-set wins; one that gives nothing back writes nothing. */
	private void giveBack(String key, Refund refund) {
		AtomicReference<long[]> cell = this.cells.getIfPresent(MemoryKeys.of(key));
		if (cell == null) {
			return;
		}
		long now = this.clock.currentTimeMillis();
		for (;;) {
			long[] state = cell.get();
			if (state.length == 0) {
				return;
			}
			long[] next = refund.apply(state, now);
			if (next == state || cell.compareAndSet(state, next)) {
				return;
			}
		}
	}

	/** A refund's transition of one key's state. */
	@FunctionalInterface
	private interface Refund {

		long[] apply(long[] state, long now);

	}

	@Override
	public CompletionStage<Void> refundAsync(String key, int cost, Decision taken) {
		refund(key, cost, taken);
		return CompletableFuture.completedFuture(null);
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
		AtomicReference<long[]> cell = this.cells.getIfPresent(key);
		long[] state = (cell != null) ? cell.get() : this.room.hasRoom() ? EMPTY : this.overflow.get();
		return this.transition.peek(state, this.clock.currentTimeMillis());
	}

	/** Forgets what the keys that came while the policy was full took: for the store's clear. */
	void clearOverflow() {
		this.overflow.set(EMPTY);
	}

	@Override
	public void reset(String given) {
		Object key = MemoryKeys.of(given);
		AtomicReference<long[]> cell = this.cells.getIfPresent(key);
		if (cell != null) {
			cell.set(EMPTY);
		}
	}

}
