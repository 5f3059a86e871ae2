package dev.throttle.spring.web;

import java.net.URI;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ProblemDetail;

import dev.throttle.Decision;
import dev.throttle.Policy;
import dev.throttle.ThrottledException;
import dev.throttle.spring.internal.aop.PolicyDecision;
import dev.throttle.spring.internal.web.RateLimitHeaders;

/**
 * A refused call as HTTP answers it, whichever entry point refused it ({@code @Throttled}, a URL
 * rule, a Spring Security login, {@code Throttler.check} in a controller) and on either web stack:
 * the status, {@code Retry-After} in whole seconds rounded up, the {@code RateLimit-Policy} and
 * {@code RateLimit} fields, and the {@code application/problem+json} body. Built once per refused
 * call by {@link ThrottleExceptionHandler#refusal(ThrottledException)}, then only rendered.
 *
 * <p>Immutable: the {@code with...} methods return a copy.
 */
public final class Refusal {

	private final List<Policy> policies;

	private final List<Decision> decisions;

	private final @Nullable Long retryAfterSeconds;

	private final @Nullable String rateLimitPolicy;

	private final @Nullable String rateLimit;

	private final HttpStatusCode status;

	private final String detail;

	private final Map<String, @Nullable Object> properties;

	private Refusal(List<Policy> policies, List<Decision> decisions, @Nullable Long retryAfterSeconds,
			@Nullable String rateLimitPolicy, @Nullable String rateLimit, HttpStatusCode status, String detail,
			Map<String, @Nullable Object> properties) {
		this.policies = policies;
		this.decisions = decisions;
		this.retryAfterSeconds = retryAfterSeconds;
		this.rateLimitPolicy = rateLimitPolicy;
		this.rateLimit = rateLimit;
		this.status = status;
		this.detail = detail;
		this.properties = properties;
	}

	/**
	 * The starter's answer to a refusal: 429, and a detail that names the policy and the wait.
	 * @param policy the refusing policy
	 * @param decision its decision
	 * @param rateLimitHeaders whether the answer carries {@code RateLimit-Policy} and {@code RateLimit}
	 * @return the refusal
	 */
	public static Refusal of(Policy policy, Decision decision, boolean rateLimitHeaders) {
		return of(policy, decision, rateLimitHeaders, HttpStatus.TOO_MANY_REQUESTS, defaultDetail(policy, decision));
	}

	static Refusal of(Policy policy, Decision decision, boolean rateLimitHeaders, HttpStatusCode status,
			String detail) {
		List<PolicyDecision> items = List.of(new PolicyDecision(policy, decision));
		// t is the refusal's own wait, so a Retry-After of the same rounding is never earlier
		Long retryAfter = decision.canSucceedLater() ? Math.max(1, decision.retryAfterSeconds()) : null;
		return new Refusal(List.of(policy), List.of(decision), retryAfter,
				rateLimitHeaders ? RateLimitHeaders.policy(items) : null,
				rateLimitHeaders ? RateLimitHeaders.limit(items) : null, status, detail,
				Map.of("violated-policies", List.of(policy.name())));
	}

	/** Which policy refused and for how long, never the key. */
	static String defaultDetail(Policy policy, Decision decision) {
		if (!decision.canSucceedLater()) {
			return "This request costs more than policy '" + policy.name() + "' can ever grant.";
		}
		long seconds = Math.max(1, decision.retryAfterSeconds());
		return "Too many requests under policy '" + policy.name() + "'; retry after " + seconds
				+ ((seconds == 1) ? " second." : " seconds.");
	}

	/**
	 * Returns this refusal answered with another status (its problem's title follows).
	 * @param status the status
	 * @return a copy
	 */
	public Refusal withStatus(HttpStatusCode status) {
		return new Refusal(this.policies, this.decisions, this.retryAfterSeconds, this.rateLimitPolicy, this.rateLimit,
				status, this.detail, this.properties);
	}

	/**
	 * Returns this refusal with another problem {@code detail}.
	 * @param detail the detail
	 * @return a copy
	 */
	public Refusal withDetail(String detail) {
		return new Refusal(this.policies, this.decisions, this.retryAfterSeconds, this.rateLimitPolicy, this.rateLimit,
				this.status, detail, this.properties);
	}

	/**
	 * Returns this refusal with one more member of the problem body (or another value of one). A
	 * value is written as JSON when it is a string, a number, a boolean, null, a collection or a map
	 * of such values, and as its {@code toString()} otherwise.
	 * @param name the member's name
	 * @param value its value
	 * @return a copy
	 */
	public Refusal withProperty(String name, @Nullable Object value) {
		Map<String, @Nullable Object> properties = new LinkedHashMap<>(this.properties);
		properties.put(name, value);
		return new Refusal(this.policies, this.decisions, this.retryAfterSeconds, this.rateLimitPolicy, this.rateLimit,
				this.status, this.detail, Collections.unmodifiableMap(properties));
	}

	/**
	 * Returns the policies that refused (one per refusal today; a list so that an answer may name several).
	 * @return the policies
	 */
	public List<Policy> policies() {
		return this.policies;
	}

	/**
	 * Returns the decisions of {@link #policies()}, in the same order.
	 * @return the decisions
	 */
	public List<Decision> decisions() {
		return this.decisions;
	}

	/**
	 * Returns {@code Retry-After}: whole seconds rounded up, at least 1, never earlier than the
	 * {@code t} of {@link #rateLimit()}.
	 * @return the value, or empty for a call that can never pass (its cost is above what the policy grants)
	 */
	public OptionalLong retryAfterSeconds() {
		return (this.retryAfterSeconds != null) ? OptionalLong.of(this.retryAfterSeconds) : OptionalLong.empty();
	}

	/**
	 * Returns the {@code RateLimit-Policy} field.
	 * @return the value, or null when {@code throttle.http.headers} is {@code none}
	 */
	public @Nullable String rateLimitPolicy() {
		return this.rateLimitPolicy;
	}

	/**
	 * Returns the {@code RateLimit} field.
	 * @return the value, or null when {@code throttle.http.headers} is {@code none}
	 */
	public @Nullable String rateLimit() {
		return this.rateLimit;
	}

	/**
	 * Returns the response status.
	 * @return the status, 429 unless customised
	 */
	public HttpStatusCode status() {
		return this.status;
	}

	/**
	 * Returns the problem's {@code type}.
	 * @return {@link ThrottleExceptionHandler#QUOTA_EXCEEDED}
	 */
	public URI type() {
		return ThrottleExceptionHandler.QUOTA_EXCEEDED;
	}

	/**
	 * Returns the problem's {@code title}: the status's reason phrase.
	 * @return the title
	 */
	public String title() {
		HttpStatus known = HttpStatus.resolve(this.status.value());
		return (known != null) ? known.getReasonPhrase() : "Too Many Requests";
	}

	/**
	 * Returns the problem's {@code detail}.
	 * @return the detail
	 */
	public String detail() {
		return this.detail;
	}

	/**
	 * Returns the problem's members after the standard ones, {@code violated-policies} first.
	 * @return the members, in order
	 */
	public Map<String, @Nullable Object> properties() {
		return this.properties;
	}

	/**
	 * Returns the problem as Spring's {@link ProblemDetail}.
	 * @param instance the problem's {@code instance} (the request's path), or null
	 * @return a new problem
	 */
	public ProblemDetail problem(@Nullable URI instance) {
		ProblemDetail problem = ProblemDetail.forStatusAndDetail(this.status, this.detail);
		problem.setType(type());
		problem.setTitle(title());
		problem.setInstance(instance);
		this.properties.forEach(problem::setProperty);
		return problem;
	}

	@Override
	public String toString() {
		return "Refusal[status=" + this.status.value() + ", policies=" + this.properties.get("violated-policies")
				+ ", retryAfter=" + this.retryAfterSeconds + "]";
	}

}
