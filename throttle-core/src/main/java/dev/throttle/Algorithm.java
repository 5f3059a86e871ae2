package dev.throttle;

import java.util.Locale;

/**
 * The throttling algorithms, by the names used in configuration.
 */
public enum Algorithm {

	/** Whole tokens refilled per period, up to a capacity. */
	TOKEN_BUCKET("token-bucket"),

	/** Generic cell rate: one score per key (the theoretical arrival time). */
	GCRA("gcra"),

	/** A count per window that starts at the key's first call. */
	FIXED_WINDOW("fixed-window"),

	/** Recent attempts, with a growing delay once a threshold is passed. */
	SLIDING_LOG("sliding-log"),

	/** A ladder of timeouts between allowed attempts, cleared on success. */
	LOCKOUT("lockout");

	private final String id;

	Algorithm(String id) {
		this.id = id;
	}

	/**
	 * Returns the name used in configuration.
	 * @return for example {@code token-bucket}
	 */
	public String id() {
		return this.id;
	}

	/**
	 * Finds an algorithm by its configuration name (case-insensitive; {@code _} and {@code -} alike).
	 * @param name for example {@code token-bucket}
	 * @return the algorithm
	 * @throws IllegalArgumentException naming the known algorithms when none matches
	 */
	public static Algorithm fromId(String name) {
		String wanted = name.trim().toLowerCase(Locale.ROOT).replace('_', '-');
		for (Algorithm algorithm : values()) {
			if (algorithm.id.equals(wanted)) {
				return algorithm;
			}
		}
		throw new IllegalArgumentException("unknown algorithm '" + name
				+ "'; expected one of token-bucket, gcra, fixed-window, sliding-log, lockout");
	}

	@Override
	public String toString() {
		return this.id;
	}

}
