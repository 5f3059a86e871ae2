package dev.throttle;

import java.time.Duration;

/**
 * Fixed window: at most {@code limit} units per window; a window starts at the key's first call
 * after the previous window ended.
 *
 * @param name the policy's name
 * @param limit units allowed per window
 * @param window the window's length
 */
public record FixedWindowPolicy(String name, int limit, Duration window) implements Policy {

	public FixedWindowPolicy {
		Checks.name(name);
		Checks.quantity(name, "limit", limit);
		Checks.duration(name, "window", window);
	}

	@Override
	public Algorithm algorithm() {
		return Algorithm.FIXED_WINDOW;
	}

	@Override
	public int quota() {
		return this.limit;
	}

	@Override
	public int maxCost() {
		return this.limit;
	}

	@Override
	public Duration idleExpiry() {
		return this.window;
	}

}
