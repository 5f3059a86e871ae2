package dev.throttle;

import java.time.Duration;

/**
 * Token bucket: a key starts with {@code capacity} tokens; a call takes {@code cost} tokens or is
 * refused; {@code refillTokens} whole tokens come back per elapsed {@code refillPeriod}, never above
 * the capacity.
 *
 * @param name the policy's name
 * @param capacity the most tokens a bucket holds (the burst)
 * @param refillTokens tokens added per period
 * @param refillPeriod how often tokens are added
 */
public record TokenBucketPolicy(String name, int capacity, int refillTokens, Duration refillPeriod) implements Policy {

	public TokenBucketPolicy {
		Checks.name(name);
		Checks.quantity(name, "capacity", capacity);
		Checks.quantity(name, "refill-tokens", refillTokens);
		Checks.duration(name, "refill-period", refillPeriod);
		long periodsToFill = (capacity + (long) refillTokens - 1) / refillTokens;
		if (periodsToFill > Checks.MAX_MILLIS / refillPeriod.toMillis()) {
			throw new InvalidPolicyException(name, "refill-period",
					"makes an empty bucket take more than 3650d to refill (capacity " + capacity + ", refill-tokens "
							+ refillTokens + ", refill-period " + Checks.format(refillPeriod) + ")");
		}
	}

	/**
	 * A bucket refilled one token per period.
	 * @param name the policy's name
	 * @param capacity the most tokens a bucket holds
	 * @param refillPeriod how often one token is added
	 * @return the policy
	 */
	public static TokenBucketPolicy of(String name, int capacity, Duration refillPeriod) {
		return new TokenBucketPolicy(name, capacity, 1, refillPeriod);
	}

	@Override
	public Algorithm algorithm() {
		return Algorithm.TOKEN_BUCKET;
	}

	@Override
	public int quota() {
		return this.capacity;
	}

	/**
	 * The time an empty bucket takes to fill.
	 */
	@Override
	public Duration window() {
		return idleExpiry();
	}

	@Override
	public int maxCost() {
		return this.capacity;
	}

	@Override
	public Duration idleExpiry() {
		long periodsToFill = (this.capacity + (long) this.refillTokens - 1) / this.refillTokens;
		return this.refillPeriod.multipliedBy(periodsToFill);
	}

}
