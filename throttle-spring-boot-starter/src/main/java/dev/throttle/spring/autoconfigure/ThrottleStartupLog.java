package dev.throttle.spring.autoconfigure;

import java.util.Collection;
import java.util.stream.Collectors;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import dev.throttle.Policy;
import dev.throttle.Throttler;

/**
 * The one INFO line throttling logs at startup, so that an operator reading the log sees what is
 * in force: the store, each policy by name and algorithm, and how many methods are throttled.
 * Never a key, nor a key expression: those may name personal data.
 */
final class ThrottleStartupLog {

	private static final Log logger = LogFactory.getLog(ThrottleStartupLog.class);

	private ThrottleStartupLog() {
	}

	/**
	 * Logs what is throttled, for example {@code Throttling 2 methods with the memory store;
	 * policies: login (lockout), api (gcra)}.
	 * @param throttler the throttler in force
	 * @param throttledMethods how many methods of beans are throttled
	 */
	static void enabled(Throttler throttler, int throttledMethods) {
		if (logger.isInfoEnabled()) {
			logger.info("Throttling " + throttledMethods + ((throttledMethods == 1) ? " method" : " methods") + " with the "
					+ throttler.store().kind() + " store; policies: " + describe(throttler.policies().values()));
		}
	}

	/**
	 * Logs that nothing is throttled although the policies were checked.
	 * @param policies the policies configured
	 */
	static void disabled(Collection<Policy> policies) {
		if (logger.isInfoEnabled()) {
			logger.info("Throttling is disabled (throttle.enabled=false): nothing is throttled; policies checked: "
					+ describe(policies));
		}
	}

	private static String describe(Collection<? extends Policy> policies) {
		if (policies.isEmpty()) {
			return "none";
		}
		return policies.stream()
			.map((policy) -> policy.name() + " (" + policy.algorithm().id() + ")")
			.collect(Collectors.joining(", "));
	}

}
