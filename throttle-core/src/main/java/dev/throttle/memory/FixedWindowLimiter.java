package dev.throttle.memory;

import com.github.benmanes.caffeine.cache.Cache;

import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.TimeSource;

/**
 * Fixed window over packed (count, windowStart). A window starts at the key's first call after the
 * previous window ended ({@code now >= start + window}); a call passes while
 * {@code count + cost <= limit}.
 */
final class FixedWindowLimiter extends PackedLimiter {

	private final int limit;

	private final long windowMillis;

	FixedWindowLimiter(FixedWindowPolicy policy, Cache<String, Cell> cells, TimeSource clock, long base) {
		super(policy, cells, clock, base);
		this.limit = policy.limit();
		this.windowMillis = policy.window().toMillis();
	}

	private long current(long state, long now) {
		return (state == EMPTY || now - time(state) >= this.windowMillis) ? EMPTY : state;
	}

	@Override
	long acquire(long state, long now, int cost) {
		long current = current(state, now);
		int count = (current == EMPTY) ? 0 : count(current);
		long start = (current == EMPTY) ? now : time(current);
		return (count + cost > this.limit) ? REJECTED : pack(count + cost, start);
	}

	@Override
	Decision allowed(long next, long now) {
		return Decision.allow(this.limit, this.limit - count(next), time(next) + this.windowMillis - now);
	}

	@Override
	Decision rejected(long state, long now, int cost) {
		long current = current(state, now);
		long untilEnd = time(current) + this.windowMillis - now;
		return Decision.reject(this.limit, this.limit - count(current), untilEnd, untilEnd);
	}

	@Override
	Decision peek(long state, long now) {
		long current = current(state, now);
		if (current == EMPTY) {
			return Decision.allow(this.limit, this.limit, 0);
		}
		if (count(current) < this.limit) {
			return Decision.allow(this.limit, this.limit - count(current), time(current) + this.windowMillis - now);
		}
		return rejected(state, now, 1);
	}

	@Override
	long refund(long state, long now, int cost) {
		long current = current(state, now);
		if (current == EMPTY || count(current) <= cost) {
			return EMPTY;
		}
		return pack(count(current) - cost, time(current));
	}

}
