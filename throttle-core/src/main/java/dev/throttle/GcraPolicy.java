package dev.throttle;

import java.time.Duration;

/**
 * GCRA: {@code limit} calls per {@code period}, with a burst of {@code limit}, kept as one score
 * per key (the theoretical arrival time, in microseconds).
 *
 * @param name the policy's name
 * @param limit calls allowed per period (n)
 * @param period the period (T)
 */
public record GcraPolicy(String name, int limit, Duration period) implements Policy {

	public GcraPolicy {
		Checks.name(name);
		Checks.quantity(name, "limit", limit);
		Checks.duration(name, "period", period);
		if (period.toMillis() * 1000 / limit < 1) {
			throw new InvalidPolicyException(name, "limit",
					"must be at most one call per microsecond of period, was " + limit + " per "
							+ Checks.format(period));
		}
	}

	@Override
	public Algorithm algorithm() {
		return Algorithm.GCRA;
	}

	/**
	 * Returns the emission interval T/n in microseconds, rounded down so that a burst of exactly
	 * {@code limit} calls fits.
	 * @return microseconds between calls at the sustained rate
	 */
	public long emissionIntervalMicros() {
		return this.period.toMillis() * 1000 / this.limit;
	}

	/**
	 * Returns the burst tolerance: how far ahead of now the score may run, {@code limit} intervals.
	 * Equals the period when the period divides evenly by the limit.
	 * @return microseconds
	 */
	public long toleranceMicros() {
		return emissionIntervalMicros() * this.limit;
	}

	@Override
	public int quota() {
		return this.limit;
	}

	@Override
	public Duration window() {
		return this.period;
	}

	@Override
	public int maxCost() {
		return this.limit;
	}

	@Override
	public Duration idleExpiry() {
		return this.period;
	}

}
