package dev.throttle;

import java.time.Duration;
import java.util.List;

/**
 * Escalating lockout (Lucia's throttler): a key's first attempt passes; each later one must come at
 * least {@code timeouts[i]} after the previous allowed one, where {@code i} climbs by one per
 * allowed attempt up to the last entry and stays there. Unlike the original, state that has been
 * idle for {@code expireAfter} is forgotten, so memory stays bounded. Pair it with
 * reset-on-success for logins.
 *
 * @param name the policy's name
 * @param timeouts the ladder of waits
 * @param expireAfter how long after the last allowed attempt the key starts over; at least the
 * longest timeout
 */
public record LockoutPolicy(String name, List<Duration> timeouts, Duration expireAfter) implements Policy {

	/** Default {@code expire-after}. */
	public static final Duration DEFAULT_EXPIRE_AFTER = Duration.ofHours(1);

	/** Most rungs a ladder may have. */
	public static final int MAX_TIMEOUTS = 100;

	public LockoutPolicy {
		Checks.name(name);
		if (timeouts == null || timeouts.isEmpty()) {
			throw new InvalidPolicyException(name, "timeouts", "must list at least one duration");
		}
		if (timeouts.size() > MAX_TIMEOUTS) {
			throw new InvalidPolicyException(name, "timeouts",
					"must list at most " + MAX_TIMEOUTS + " durations, was " + timeouts.size());
		}
		timeouts = List.copyOf(timeouts);
		Duration longest = Duration.ZERO;
		for (int i = 0; i < timeouts.size(); i++) {
			Duration timeout = Checks.duration(name, "timeouts[" + i + "]", timeouts.get(i));
			longest = (timeout.compareTo(longest) > 0) ? timeout : longest;
		}
		Checks.duration(name, "expire-after", expireAfter);
		if (expireAfter.compareTo(longest) < 0) {
			throw new InvalidPolicyException(name, "expire-after", "must be at least the longest timeout ("
					+ Checks.format(longest) + "), was " + Checks.format(expireAfter)
					+ "; otherwise a locked-out key would be forgotten mid-lockout");
		}
	}

	/**
	 * A ladder that forgets idle keys after {@link #DEFAULT_EXPIRE_AFTER} (or the longest timeout,
	 * when that is longer).
	 * @param name the policy's name
	 * @param timeouts the ladder of waits
	 * @return the policy
	 */
	public static LockoutPolicy of(String name, List<Duration> timeouts) {
		Duration longest = timeouts.stream().max(Duration::compareTo).orElse(Duration.ZERO);
		return new LockoutPolicy(name, timeouts,
				(longest.compareTo(DEFAULT_EXPIRE_AFTER) > 0) ? longest : DEFAULT_EXPIRE_AFTER);
	}

	/**
	 * Returns the timeouts in milliseconds.
	 * @return a new array
	 */
	public long[] timeoutsMillis() {
		return this.timeouts.stream().mapToLong(Duration::toMillis).toArray();
	}

	@Override
	public Algorithm algorithm() {
		return Algorithm.LOCKOUT;
	}

	/**
	 * Always 1: one attempt, then a wait.
	 */
	@Override
	public int quota() {
		return 1;
	}

	@Override
	public Duration window() {
		return this.expireAfter;
	}

	@Override
	public int maxCost() {
		return 1;
	}

	@Override
	public Duration idleExpiry() {
		return this.expireAfter;
	}

}
