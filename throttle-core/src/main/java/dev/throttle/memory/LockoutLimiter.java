package dev.throttle.memory;

import com.github.benmanes.caffeine.cache.Cache;

import dev.throttle.Decision;
import dev.throttle.LockoutPolicy;
import dev.throttle.TimeSource;

/**
 * Escalating lockout over packed (index, lastAllowed). The first attempt passes and stores
 * (0, now); an attempt passes when {@code now - lastAllowed >= timeouts[index]} and stores
 * (min(index + 1, last rung), now). A refusal writes nothing. State idle for {@code expireAfter}
 * counts as never used. A refund steps back one rung: (i, t) becomes (i - 1, t - timeouts[i - 1]),
 * which lets the next attempt through at once, as the refunded call's predecessor state did.
 */
final class LockoutLimiter extends PackedLimiter {

	private final long[] timeouts;

	private final long expireAfterMillis;

	LockoutLimiter(LockoutPolicy policy, Cache<String, Cell> cells, TimeSource clock, long base) {
		super(policy, cells, clock, base);
		this.timeouts = policy.timeoutsMillis();
		this.expireAfterMillis = policy.expireAfter().toMillis();
	}

	private long current(long state, long now) {
		return (state == EMPTY || now - time(state) >= this.expireAfterMillis) ? EMPTY : state;
	}

	@Override
	long acquire(long state, long now, int cost) {
		long current = current(state, now);
		if (current == EMPTY) {
			return pack(0, now);
		}
		int index = count(current);
		if (now - time(current) < this.timeouts[index]) {
			return REJECTED;
		}
		return pack(Math.min(index + 1, this.timeouts.length - 1), now);
	}

	@Override
	Decision allowed(long next, long now) {
		return Decision.allow(1, 0, time(next) + this.expireAfterMillis - now);
	}

	@Override
	Decision rejected(long state, long now, int cost) {
		long current = current(state, now);
		long lastAllowed = time(current);
		return Decision.reject(1, 0, lastAllowed + this.timeouts[count(current)] - now,
				lastAllowed + this.expireAfterMillis - now);
	}

	@Override
	Decision peek(long state, long now) {
		long current = current(state, now);
		if (current == EMPTY) {
			return Decision.allow(1, 1, 0);
		}
		if (now - time(current) >= this.timeouts[count(current)]) {
			return Decision.allow(1, 1, time(current) + this.expireAfterMillis - now);
		}
		return rejected(state, now, 1);
	}

	@Override
	long refund(long state, long now, int cost) {
		long current = current(state, now);
		if (current == EMPTY || count(current) == 0) {
			return EMPTY;
		}
		int previous = count(current) - 1;
		return pack(previous, time(current) - this.timeouts[previous]);
	}

}
