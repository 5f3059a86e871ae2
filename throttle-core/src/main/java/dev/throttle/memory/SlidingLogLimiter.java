package dev.throttle.memory;

import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

import com.github.benmanes.caffeine.cache.Cache;

import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.TimeSource;

/**
 * Sliding log: the times of a key's recent allowed attempts, oldest first, in an immutable array
 * swapped by compare-and-set.
 *
 * <p>An attempt older than {@code ttl} ({@code now - t >= ttl}) no longer counts. With {@code c}
 * live attempts, {@code over = c + 1 - threshold}; when {@code over > 0} the call must come at least
 * {@code delays[over - 1]} after the most recent attempt. A refused call is not recorded. The array
 * never holds more than {@link SlidingLogPolicy#maxEntries()} times: that many fit in one ttl, so
 * anything older could not count. A refund removes the most recent attempt.
 */
final class SlidingLogLimiter implements Limiter {

	private static final long[] EMPTY = new long[0];

	private static final Function<String, AtomicReference<long[]>> NEW_CELL = (key) -> new AtomicReference<>(EMPTY);

	private final SlidingLogPolicy policy;

	private final Cache<String, AtomicReference<long[]>> cells;

	private final TimeSource clock;

	private final int threshold;

	private final long ttlMillis;

	private final long[] delays;

	private final int maxEntries;

	SlidingLogLimiter(SlidingLogPolicy policy, Cache<String, AtomicReference<long[]>> cells, TimeSource clock) {
		this.policy = policy;
		this.cells = cells;
		this.clock = clock;
		this.threshold = policy.threshold();
		this.ttlMillis = policy.ttl().toMillis();
		this.delays = policy.delaysMillis();
		this.maxEntries = policy.maxEntries();
	}

	@Override
	public Policy policy() {
		return this.policy;
	}

	private int live(long[] log, long now) {
		int live = 0;
		for (long time : log) {
			if (now - time < this.ttlMillis) {
				live++;
			}
		}
		return live;
	}

	/** How long the next attempt must still wait, 0 when it may pass now. */
	private long wait(long[] log, int live, long now) {
		int over = live + 1 - this.threshold;
		if (over <= 0) {
			return 0;
		}
		long delay = this.delays[Math.min(over, this.delays.length) - 1];
		return Math.max(0, log[log.length - 1] + delay - now);
	}

	@Override
	public Decision tryAcquire(String key, int cost) {
		AtomicReference<long[]> cell = this.cells.get(key, NEW_CELL);
		long now = this.clock.currentTimeMillis();
		for (;;) {
			long[] log = cell.get();
			int live = live(log, now);
			long wait = wait(log, live, now);
			if (wait > 0) {
				return Decision.reject(this.threshold, 0, wait, log[log.length - 1] + this.ttlMillis - now);
			}
			int kept = Math.min(live, this.maxEntries - 1);
			long[] next = new long[kept + 1];
			int at = kept;
			for (int i = log.length - 1; i >= 0 && at > 0; i--) {
				if (now - log[i] < this.ttlMillis) {
					next[--at] = log[i];
				}
			}
			next[kept] = now;
			if (cell.compareAndSet(log, next)) {
				return Decision.allow(this.threshold, Math.max(0, this.threshold - next.length), this.ttlMillis);
			}
		}
	}

	@Override
	public void refund(String key, int cost) {
		AtomicReference<long[]> cell = this.cells.getIfPresent(key);
		if (cell == null) {
			return;
		}
		for (;;) {
			long[] log = cell.get();
			if (log.length == 0) {
				return;
			}
			long[] next = (log.length == 1) ? EMPTY : java.util.Arrays.copyOf(log, log.length - 1);
			if (cell.compareAndSet(log, next)) {
				return;
			}
		}
	}

	@Override
	public Decision peek(String key) {
		AtomicReference<long[]> cell = this.cells.getIfPresent(key);
		long[] log = (cell != null) ? cell.get() : EMPTY;
		long now = this.clock.currentTimeMillis();
		int live = live(log, now);
		if (live == 0) {
			return Decision.allow(this.threshold, this.threshold, 0);
		}
		long untilNeutral = log[log.length - 1] + this.ttlMillis - now;
		long wait = wait(log, live, now);
		if (wait > 0) {
			return Decision.reject(this.threshold, 0, wait, untilNeutral);
		}
		return Decision.allow(this.threshold, Math.max(0, this.threshold - live), untilNeutral);
	}

	@Override
	public void reset(String key) {
		AtomicReference<long[]> cell = this.cells.getIfPresent(key);
		if (cell != null) {
			cell.set(EMPTY);
		}
	}

}
