package dev.throttle.memory;

import com.github.benmanes.caffeine.cache.Cache;

import dev.throttle.Decision;
import dev.throttle.TimeSource;
import dev.throttle.TokenBucketPolicy;

/**
 * Token bucket over packed (tokens, refilledAt).
 *
 * <p>Refill: {@code periods = (now - refilledAt) / refillPeriod} whole periods add
 * {@code periods * refillTokens} tokens and move {@code refilledAt} forward by exactly
 * {@code periods * refillPeriod}, so the part of a period already elapsed is kept (the source
 * document's Redis version set it to now and lost it). Once the bucket is full the clock restarts
 * at now: time spent full earns nothing. A missing key is a full bucket.
 */
final class TokenBucketLimiter extends PackedLimiter {

	private final int capacity;

	private final int refillTokens;

	private final long periodMillis;

	TokenBucketLimiter(TokenBucketPolicy policy, Cache<String, Cell> cells, TimeSource clock, long base) {
		super(policy, cells, clock, base);
		this.capacity = policy.capacity();
		this.refillTokens = policy.refillTokens();
		this.periodMillis = policy.refillPeriod().toMillis();
	}

	private long refill(long state, long now) {
		if (state == EMPTY || count(state) >= this.capacity) {
			return pack(this.capacity, now);
		}
		int tokens = count(state);
		long refilledAt = time(state);
		long elapsed = now - refilledAt;
		if (elapsed < this.periodMillis) {
			return state;
		}
		long periods = elapsed / this.periodMillis;
		long periodsToFull = ceilDiv(this.capacity - tokens, this.refillTokens);
		if (periods >= periodsToFull) {
			return pack(this.capacity, now);
		}
		return pack(tokens + periods * this.refillTokens, refilledAt + periods * this.periodMillis);
	}

	private long untilFull(long state, long now) {
		int tokens = count(state);
		if (tokens >= this.capacity) {
			return 0;
		}
		return Math.max(0, time(state) + ceilDiv(this.capacity - tokens, this.refillTokens) * this.periodMillis - now);
	}

	@Override
	long acquire(long state, long now, int cost) {
		long refilled = refill(state, now);
		int tokens = count(refilled);
		return (tokens < cost) ? REJECTED : pack(tokens - cost, time(refilled));
	}

	@Override
	Decision allowed(long next, long now) {
		return Decision.allow(this.capacity, count(next), untilFull(next, now));
	}

	@Override
	Decision rejected(long state, long now, int cost) {
		long refilled = refill(state, now);
		int tokens = count(refilled);
		long periodsNeeded = ceilDiv(cost - tokens, this.refillTokens);
		long retryAfter = time(refilled) + periodsNeeded * this.periodMillis - now;
		return Decision.reject(this.capacity, tokens, retryAfter, untilFull(refilled, now));
	}

	@Override
	Decision peek(long state, long now) {
		long refilled = refill(state, now);
		return (count(refilled) >= 1) ? allowed(refilled, now) : rejected(state, now, 1);
	}

	@Override
	long refund(long state, long now, int cost) {
		long refilled = refill(state, now);
		long tokens = Math.min(this.capacity, count(refilled) + (long) cost);
		return (tokens >= this.capacity) ? EMPTY : pack(tokens, time(refilled));
	}

}
