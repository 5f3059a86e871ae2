package dev.throttle.spring.autoconfigure;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.throttle.Algorithm;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.InvalidPolicyException;
import dev.throttle.LockoutPolicy;
import dev.throttle.Policy;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.spring.ThrottleConfigurationException;

/**
 * Turns {@code throttle.policies.*} into validated {@link Policy} values, or fails with a message
 * that names the property.
 */
final class PolicyFactory {

	private static final String PREFIX = "throttle.policies.";

	private PolicyFactory() {
	}

	static List<Policy> create(Map<String, ThrottleProperties.Policy> properties) {
		List<Policy> policies = new ArrayList<>();
		properties.forEach((name, settings) -> policies.add(create(name, settings)));
		return policies;
	}

	static Policy create(String name, ThrottleProperties.Policy settings) {
		String path = PREFIX + name;
		if (settings.getAlgorithm() == null || settings.getAlgorithm().isBlank()) {
			throw new ThrottleConfigurationException(
					path + ".algorithm is required: one of token-bucket, gcra, fixed-window, sliding-log, lockout");
		}
		Algorithm algorithm;
		try {
			algorithm = Algorithm.fromId(settings.getAlgorithm());
		}
		catch (IllegalArgumentException ex) {
			throw new ThrottleConfigurationException(path + ".algorithm: " + ex.getMessage());
		}
		rejectParametersOfOtherAlgorithms(path, algorithm, settings);
		try {
			return switch (algorithm) {
				case TOKEN_BUCKET -> new TokenBucketPolicy(name, required(path, "capacity", settings.getCapacity()),
						(settings.getRefillTokens() != null) ? settings.getRefillTokens() : 1,
						required(path, "refill-period", settings.getRefillPeriod()));
				case GCRA -> new GcraPolicy(name, required(path, "limit", settings.getLimit()),
						required(path, "period", settings.getPeriod()));
				case FIXED_WINDOW -> new FixedWindowPolicy(name, required(path, "limit", settings.getLimit()),
						required(path, "window", settings.getWindow()));
				case SLIDING_LOG -> new SlidingLogPolicy(name,
						orDefault(settings.getThreshold(), SlidingLogPolicy.DEFAULT_THRESHOLD),
						orDefault(settings.getTtl(), SlidingLogPolicy.DEFAULT_TTL),
						orDefault(settings.getInitialDelay(), SlidingLogPolicy.DEFAULT_INITIAL_DELAY),
						orDefault(settings.getDelayExponent(), SlidingLogPolicy.DEFAULT_DELAY_EXPONENT));
				case LOCKOUT -> lockout(name, path, settings);
			};
		}
		catch (InvalidPolicyException ex) {
			throw new ThrottleConfigurationException(path + "." + ex.parameter() + " " + ex.problem());
		}
		catch (IllegalArgumentException ex) {
			throw new ThrottleConfigurationException(path + ": " + ex.getMessage());
		}
	}

	private static Policy lockout(String name, String path, ThrottleProperties.Policy settings) {
		List<Duration> timeouts = required(path, "timeouts", settings.getTimeouts());
		for (int i = 0; i < timeouts.size(); i++) {
			if (timeouts.get(i) == null) {
				throw new ThrottleConfigurationException(path + ".timeouts[" + i + "] is empty");
			}
		}
		return (settings.getExpireAfter() != null) ? new LockoutPolicy(name, timeouts, settings.getExpireAfter())
				: LockoutPolicy.of(name, timeouts);
	}

	private static <T> T required(String path, String parameter, T value) {
		if (value == null) {
			throw new ThrottleConfigurationException(path + "." + parameter + " is required");
		}
		return value;
	}

	private static <T> T orDefault(T value, T fallback) {
		return (value != null) ? value : fallback;
	}

	private static void rejectParametersOfOtherAlgorithms(String path, Algorithm algorithm,
			ThrottleProperties.Policy settings) {
		Map<String, Object> given = new LinkedHashMap<>();
		given.put("capacity", settings.getCapacity());
		given.put("refill-tokens", settings.getRefillTokens());
		given.put("refill-period", settings.getRefillPeriod());
		given.put("limit", settings.getLimit());
		given.put("period", settings.getPeriod());
		given.put("window", settings.getWindow());
		given.put("threshold", settings.getThreshold());
		given.put("ttl", settings.getTtl());
		given.put("initial-delay", settings.getInitialDelay());
		given.put("delay-exponent", settings.getDelayExponent());
		given.put("timeouts", settings.getTimeouts());
		given.put("expire-after", settings.getExpireAfter());
		List<String> accepted = parameters(algorithm);
		given.forEach((parameter, value) -> {
			if (value != null && !accepted.contains(parameter)) {
				throw new ThrottleConfigurationException(path + "." + parameter + " means nothing to the " + algorithm
						+ " algorithm, which takes " + String.join(", ", accepted));
			}
		});
	}

	private static List<String> parameters(Algorithm algorithm) {
		return switch (algorithm) {
			case TOKEN_BUCKET -> List.of("capacity", "refill-tokens", "refill-period");
			case GCRA -> List.of("limit", "period");
			case FIXED_WINDOW -> List.of("limit", "window");
			case SLIDING_LOG -> List.of("threshold", "ttl", "initial-delay", "delay-exponent");
			case LOCKOUT -> List.of("timeouts", "expire-after");
		};
	}

}
