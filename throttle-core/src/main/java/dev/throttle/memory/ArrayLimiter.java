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
 * the array means is the algorithm's {@link ArrayTransition}. A refusal writes nothing.
 */
final class ArrayLimiter implements Limiter {

	private static final Function<String, AtomicReference<long[]>> NEW_CELL = (key) -> new AtomicReference<>(EMPTY);

	private final Policy policy;

	private final Cache<String, AtomicReference<long[]>> cells;

	private final TimeSource clock;

	private final ArrayTransition transition;

	ArrayLimiter(Policy policy, Cache<String, AtomicReference<long[]>> cells, TimeSource clock,
			ArrayTransition transition) {
		this.policy = policy;
		this.cells = cells;
		this.clock = clock;
		this.transition = transition;
	}

	@Override
	public Policy policy() {
		return this.policy;
	}

	@Override
	public Decision tryAcquire(String key, int cost) {
		AtomicReference<long[]> cell = this.cells.get(key, NEW_CELL);
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
	public void refund(String key, int cost) {
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
		AtomicReference<long[]> cell = this.cells.getIfPresent(key);
		if (cell == null) {
			return;
		}
		long now = this.clock.currentTimeMillis();
		for (;;) {
			long[] state = cell.get();
			if (state.length == 0) {
				return;
			}
			long[] next = this.transition.refund(state, now, cost, receipt);
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

	@Override
	public Decision peek(String key) {
		AtomicReference<long[]> cell = this.cells.getIfPresent(key);
		return this.transition.peek((cell != null) ? cell.get() : EMPTY, this.clock.currentTimeMillis());
	}

	@Override
	public void reset(String key) {
		AtomicReference<long[]> cell = this.cells.getIfPresent(key);
		if (cell != null) {
			cell.set(EMPTY);
		}
	}

}
