package dev.throttle;

import java.time.Duration;

/**
 * The outcome of one throttling decision. Immutable and thread-safe.
 *
 * @param allowed whether the call may proceed
 * @param limit the policy's quota (calls or tokens per window); 1 for a lockout
 * @param remaining how many units a caller could still take right now
 * @param retryAfterMillis 0 when allowed; otherwise how long until the same call could pass,
 * or {@link #NEVER} when the call's cost can never be granted by the policy
 * @param resetAfterMillis how long until the key's state is neutral (as if never used) again
 */
public record Decision(boolean allowed, int limit, int remaining, long retryAfterMillis, long resetAfterMillis) {

	/** {@link #retryAfterMillis()} of a call that no amount of waiting lets through. */
	public static final long NEVER = Long.MAX_VALUE;

	public Decision {
		if (remaining < 0 || limit < 0) {
			throw new IllegalArgumentException("limit and remaining must not be negative");
		}
		if (resetAfterMillis < 0) {
			throw new IllegalArgumentException("resetAfterMillis must not be negative");
		}
		if (allowed ? retryAfterMillis != 0 : retryAfterMillis <= 0) {
			throw new IllegalArgumentException(
					"retryAfterMillis must be 0 when allowed and positive when rejected, was " + retryAfterMillis);
		}
	}

	/**
	 * An allowed decision.
	 * @param limit the policy's quota
	 * @param remaining units left
	 * @param resetAfterMillis time until the state is neutral
	 * @return the decision
	 */
	public static Decision allow(int limit, int remaining, long resetAfterMillis) {
		return new Decision(true, limit, remaining, 0, resetAfterMillis);
	}

	/**
	 * A refused decision.
	 * @param limit the policy's quota
	 * @param remaining units left (fewer than the call needs)
	 * @param retryAfterMillis time until the same call could pass, at least 1
	 * @param resetAfterMillis time until the state is neutral
	 * @return the decision
	 */
	public static Decision reject(int limit, int remaining, long retryAfterMillis, long resetAfterMillis) {
		return new Decision(false, limit, remaining, Math.max(1, retryAfterMillis), resetAfterMillis);
	}

	/**
	 * A refusal of a cost that the policy can never grant, however long the caller waits.
	 * @param limit the policy's quota
	 * @return the decision
	 */
	public static Decision neverAllowed(int limit) {
		return new Decision(false, limit, 0, NEVER, 0);
	}

	/**
	 * Whether waiting can ever let this call through.
	 * @return false only for a cost above what the policy can grant
	 */
	public boolean canSucceedLater() {
		return this.allowed || this.retryAfterMillis != NEVER;
	}

	/**
	 * Returns {@link #retryAfterMillis()} as a duration.
	 * @return the wait; {@link Duration#ZERO} when allowed
	 */
	public Duration retryAfter() {
		return Duration.ofMillis(this.retryAfterMillis);
	}

	/**
	 * Returns {@link #resetAfterMillis()} as a duration.
	 * @return time until the state is neutral
	 */
	public Duration resetAfter() {
		return Duration.ofMillis(this.resetAfterMillis);
	}

	/**
	 * Returns the wait in whole seconds, rounded up, as HTTP {@code Retry-After} wants it.
	 * @return 0 when allowed, otherwise at least 1
	 */
	public long retryAfterSeconds() {
		return ceilSeconds(this.retryAfterMillis);
	}

	/**
	 * Returns the time until reset in whole seconds, rounded up.
	 * @return seconds
	 */
	public long resetAfterSeconds() {
		return ceilSeconds(this.resetAfterMillis);
	}

	private static long ceilSeconds(long millis) {
		return (millis == NEVER) ? NEVER / 1000 : (millis + 999) / 1000;
	}

}
