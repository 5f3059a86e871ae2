package dev.throttle.memory;

import com.github.benmanes.caffeine.cache.Cache;

import dev.throttle.Decision;
import dev.throttle.GcraPolicy;
import dev.throttle.TimeSource;

/**
 * GCRA over one long: the theoretical arrival time (TAT) in microseconds since the epoch.
 *
 * <p>The cooldown document's rule, with emission interval {@code I = T/n} (microseconds, rounded
 * down) and tolerance {@code n * I} (equal to T when n divides T): the trial score is
 * {@code max(TAT, now) + cost * I}; the call passes when the trial score is at most
 * {@code now + n * I}, and the trial score is stored; otherwise nothing is written and the caller
 * may retry after {@code trial - n * I - now}. Microseconds keep rates such as 3 per second exact
 * to a microsecond instead of rounding them to whole milliseconds.
 */
final class GcraLimiter extends PackedLimiter {

	private final int limit;

	private final long intervalMicros;

	private final long toleranceMicros;

	GcraLimiter(GcraPolicy policy, Cache<String, Cell> cells, TimeSource clock, long base) {
		super(policy, cells, clock, base);
		this.limit = policy.limit();
		this.intervalMicros = policy.emissionIntervalMicros();
		this.toleranceMicros = policy.toleranceMicros();
	}

	@Override
	long acquire(long state, long now, int cost) {
		long nowMicros = now * 1000;
		long trial = Math.max(state, nowMicros) + cost * this.intervalMicros;
		return (trial - nowMicros > this.toleranceMicros) ? REJECTED : trial;
	}

	@Override
	Decision allowed(long next, long now) {
		long ahead = next - now * 1000;
		return Decision.allow(this.limit, remaining(ahead), ceilDiv(ahead, 1000));
	}

	@Override
	Decision rejected(long state, long now, int cost) {
		long nowMicros = now * 1000;
		long ahead = Math.max(state, nowMicros) - nowMicros;
		long retryMicros = ahead + cost * this.intervalMicros - this.toleranceMicros;
		return Decision.reject(this.limit, remaining(ahead), ceilDiv(retryMicros, 1000), ceilDiv(ahead, 1000));
	}

	@Override
	Decision peek(long state, long now) {
		long nowMicros = now * 1000;
		long ahead = Math.max(state, nowMicros) - nowMicros;
		if (ahead + this.intervalMicros <= this.toleranceMicros) {
			return Decision.allow(this.limit, remaining(ahead), ceilDiv(ahead, 1000));
		}
		return rejected(state, now, 1);
	}

	private int remaining(long aheadMicros) {
		return (int) Math.max(0, (this.toleranceMicros - aheadMicros) / this.intervalMicros);
	}

	@Override
	long refund(long state, long now, int cost) {
		long tat = state - cost * this.intervalMicros;
		return (tat <= now * 1000) ? EMPTY : tat;
	}

}
