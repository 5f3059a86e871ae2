package dev.throttle.spring.autoconfigure;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.springframework.beans.BeanWrapper;
import org.springframework.beans.BeanWrapperImpl;

import dev.throttle.Algorithm;
import dev.throttle.InvalidPolicyException;
import dev.throttle.Policy;
import dev.throttle.spring.ThrottleConfigurationException;

/**
 * Turns {@code throttle.policies.*} into validated {@link Policy} values, or fails with a message
 * that names the property. The algorithm named by {@code algorithm} builds the policy from the
 * parameters that are set, by their configuration names: its defaults and checks live with it.
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
			throw new ThrottleConfigurationException(path + ".algorithm is required: one of " + Algorithm.ids());
		}
		Algorithm<?> algorithm;
		try {
			algorithm = Algorithm.fromId(settings.getAlgorithm());
		}
		catch (IllegalArgumentException ex) {
			throw new ThrottleConfigurationException(path + ".algorithm: " + ex.getMessage());
		}
		try {
			return algorithm.create(name, parameters(settings));
		}
		catch (InvalidPolicyException ex) {
			throw new ThrottleConfigurationException(path + "." + ex.parameter() + " " + ex.problem());
		}
		catch (IllegalArgumentException ex) {
			throw new ThrottleConfigurationException(path + ": " + ex.getMessage());
		}
	}

	/**
	 * The algorithm parameters a policy sets, by configuration name: each property of
	 * {@link ThrottleProperties.Policy} that some algorithm takes and that is set. Settings every
	 * policy has (such as {@code count}) are no algorithm's, so they are never among them.
	 */
	private static Map<String, Object> parameters(ThrottleProperties.Policy settings) {
		BeanWrapper properties = new BeanWrapperImpl(settings);
		Map<String, Object> parameters = new LinkedHashMap<>();
		for (Algorithm<?> algorithm : Algorithm.all()) {
			for (String parameter : algorithm.parameters()) {
				String property = camelCase(parameter);
				Object value = properties.isReadableProperty(property) ? properties.getPropertyValue(property) : null;
				if (value != null) {
					parameters.putIfAbsent(parameter, value);
				}
			}
		}
		return parameters;
	}

	/** {@code refill-tokens} as a Java property: {@code refillTokens}. */
	private static String camelCase(String parameter) {
		StringBuilder property = new StringBuilder(parameter.length());
		boolean upper = false;
		for (char c : parameter.toCharArray()) {
			if (c == '-') {
				upper = true;
			}
			else {
				property.append(upper ? Character.toUpperCase(c) : c);
				upper = false;
			}
		}
		return property.toString();
	}

}
