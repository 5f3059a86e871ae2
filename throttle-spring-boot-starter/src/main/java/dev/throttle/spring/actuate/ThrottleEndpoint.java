package dev.throttle.spring.actuate;

import java.util.LinkedHashMap;
import java.util.Map;

import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;

import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.LockoutPolicy;
import dev.throttle.Policy;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.Throttler;
import dev.throttle.TokenBucketPolicy;

/**
 * The {@code throttle} actuator endpoint: {@code GET /actuator/throttle} lists the policies;
 * {@code GET /actuator/throttle/{policy}/{key}} shows a key's state without consuming anything;
 * {@code DELETE /actuator/throttle/{policy}/{key}} forgets it (unlocks a user). Like every
 * endpoint, it is reachable over HTTP only when the application exposes it.
 */
@Endpoint(id = "throttle")
public class ThrottleEndpoint {

	private final Throttler throttler;

	/**
	 * Creates the endpoint.
	 * @param throttler the throttler
	 */
	public ThrottleEndpoint(Throttler throttler) {
		this.throttler = throttler;
	}

	/**
	 * Lists the store and the policies with their settings.
	 * @return a description
	 */
	@ReadOperation
	public Map<String, Object> policies() {
		Map<String, Object> policies = new LinkedHashMap<>();
		this.throttler.policies().forEach((name, policy) -> policies.put(name, describe(policy)));
		Map<String, Object> description = new LinkedHashMap<>();
		description.put("store", this.throttler.store().kind());
		description.put("policies", policies);
		return description;
	}

	/**
	 * Shows what a call would be told now for a key, without taking anything.
	 * @param policy the policy's name
	 * @param key the key
	 * @return the decision, or null (404) for an unknown policy
	 */
	@ReadOperation
	public Map<String, Object> peek(@Selector String policy, @Selector String key) {
		if (!this.throttler.policies().containsKey(policy)) {
			return null;
		}
		Decision decision = this.throttler.peek(policy, key);
		Map<String, Object> state = new LinkedHashMap<>();
		state.put("policy", policy);
		state.put("allowed", decision.allowed());
		state.put("limit", decision.limit());
		state.put("remaining", decision.remaining());
		state.put("retryAfterMillis", decision.retryAfterMillis());
		state.put("resetAfterMillis", decision.resetAfterMillis());
		return state;
	}

	/**
	 * Forgets a key's state under a policy.
	 * @param policy the policy's name
	 * @param key the key
	 * @return the policy and {@code reset: true}
	 * @throws InvalidEndpointRequestException (400) for an unknown policy: an operator who mistyped
	 * it must not be told, by an empty success, that the user is unlocked
	 */
	@DeleteOperation
	public Map<String, Object> reset(@Selector String policy, @Selector String key) {
		if (!this.throttler.policies().containsKey(policy)) {
			String message = "No throttle policy '" + policy + "' (configured: "
					+ String.join(", ", this.throttler.policies().keySet()) + ")";
			throw new InvalidEndpointRequestException(message, message);
		}
		this.throttler.reset(policy, key);
		return Map.of("policy", policy, "reset", true);
	}

	private static Map<String, Object> describe(Policy policy) {
		Map<String, Object> settings = new LinkedHashMap<>();
		settings.put("algorithm", policy.algorithm().id());
		if (policy instanceof TokenBucketPolicy bucket) {
			settings.put("capacity", bucket.capacity());
			settings.put("refill-tokens", bucket.refillTokens());
			settings.put("refill-period", bucket.refillPeriod().toString());
		}
		else if (policy instanceof GcraPolicy gcra) {
			settings.put("limit", gcra.limit());
			settings.put("period", gcra.period().toString());
		}
		else if (policy instanceof FixedWindowPolicy window) {
			settings.put("limit", window.limit());
			settings.put("window", window.window().toString());
		}
		else if (policy instanceof SlidingLogPolicy log) {
			settings.put("threshold", log.threshold());
			settings.put("ttl", log.ttl().toString());
			settings.put("initial-delay", log.initialDelay().toString());
			settings.put("delay-exponent", log.delayExponent());
		}
		else if (policy instanceof LockoutPolicy lockout) {
			settings.put("timeouts", lockout.timeouts().stream().map(Object::toString).toList());
			settings.put("expire-after", lockout.expireAfter().toString());
		}
		return settings;
	}

}
