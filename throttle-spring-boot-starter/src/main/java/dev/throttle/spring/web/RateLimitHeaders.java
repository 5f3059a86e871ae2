package dev.throttle.spring.web;

import java.util.List;
import java.util.stream.Collectors;

import dev.throttle.Decision;
import dev.throttle.Policy;
import dev.throttle.spring.aop.PolicyDecision;

/**
 * Formats the {@code RateLimit-Policy} and {@code RateLimit} fields of
 * draft-ietf-httpapi-ratelimit-headers-10: {@code "login";q=5;w=900} and
 * {@code "login";r=0;t=8}. Items are named by policy, never by key, so no e-mail address or
 * IP address leaves in a header.
 */
public final class RateLimitHeaders {

	/** The policy field's name. */
	public static final String POLICY = "RateLimit-Policy";

	/** The limit field's name. */
	public static final String LIMIT = "RateLimit";

	private RateLimitHeaders() {
	}

	/**
	 * Formats the {@code RateLimit-Policy} value for some decisions.
	 * @param decisions the decisions
	 * @return a list of policy items
	 */
	public static String policy(List<PolicyDecision> decisions) {
		return decisions.stream().map((d) -> policyItem(d.policy())).collect(Collectors.joining(", "));
	}

	/**
	 * Formats the {@code RateLimit} value for some decisions.
	 * @param decisions the decisions
	 * @return a list of limit items
	 */
	public static String limit(List<PolicyDecision> decisions) {
		return decisions.stream().map((d) -> limitItem(d.policy(), d.decision())).collect(Collectors.joining(", "));
	}

	static String policyItem(Policy policy) {
		return "\"" + policy.name() + "\";q=" + policy.quota() + ";w=" + Math.max(1, ceilSeconds(policy.window().toMillis()));
	}

	static String limitItem(Policy policy, Decision decision) {
		return "\"" + policy.name() + "\";r=" + decision.remaining() + ";t=" + decision.resetAfterSeconds();
	}

	private static long ceilSeconds(long millis) {
		return (millis + 999) / 1000;
	}

}
