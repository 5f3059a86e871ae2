package dev.throttle.spring.web;

import dev.throttle.Decision;
import dev.throttle.Policy;
import dev.throttle.ThrottledException;
import dev.throttle.spring.admission.PolicyDecision;
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

/**
 * A refused call as HTTP answers it, whichever entry point refused it ({@code @Throttled}, a URL
 * rule, a Spring Security login, {@code Throttler.check} in a controller) and on either web stack.
 * Built once per refused call by {@link ThrottleExceptionHandler#refusal(ThrottledException)}, then
 * only rendered. Immutable: {@link #withProperty} returns a copy.
 *
 * @param policies the policies that refused (one per refusal today; a list so that an answer may name several)
 * @param decisions their decisions, in the same order
 * @param retryAfterSeconds {@code Retry-After}: whole seconds rounded up, at least 1, never earlier
 * than the {@code t} of {@code rateLimit}; empty for a call that can never pass (its cost is above
 * what the policy grants)
 * @param rateLimitPolicy the {@code RateLimit-Policy} field, or null when {@code throttle.http.headers} is {@code none}
 * @param rateLimit the {@code RateLimit} field, or null when {@code throttle.http.headers} is {@code none}
 * @param status the response status, 429 unless customised
 * @param detail the problem's {@code detail}
 * @param properties the problem's members after the standard ones, {@code violated-policies} first
 */
public record Refusal(
        List<Policy> policies,
        List<Decision> decisions,
        OptionalLong retryAfterSeconds,
        @Nullable String rateLimitPolicy,
        @Nullable String rateLimit,
        HttpStatusCode status,
        String detail,
        Map<String, @Nullable Object> properties) {

    /** Copies the lists and the members, so that the refusal never changes. */
    public Refusal {
        policies = List.copyOf(policies);
        decisions = List.copyOf(decisions);
        properties = Collections.unmodifiableMap(new LinkedHashMap<>(properties));
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

    static Refusal of(
            Policy policy, Decision decision, boolean rateLimitHeaders, HttpStatusCode status, String detail) {
        List<PolicyDecision> items = List.of(new PolicyDecision(policy, decision));
        // t is the refusal's own wait, so a Retry-After of the same rounding is never earlier
        OptionalLong retryAfter = decision.canSucceedLater()
                ? OptionalLong.of(Math.max(1, decision.retryAfterSeconds()))
                : OptionalLong.empty();
        return new Refusal(
                List.of(policy),
                List.of(decision),
                retryAfter,
                rateLimitHeaders ? RateLimitHeaders.policy(items) : null,
                rateLimitHeaders ? RateLimitHeaders.limit(items) : null,
                status,
                detail,
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
     * Returns this refusal with one more member of the problem body (or another value of one). A
     * value is written as JSON when it is a string, a number, a boolean, null or a collection of
     * such values, and as a string of its {@code toString()} otherwise.
     * @param name the member's name
     * @param value its value
     * @return a copy
     */
    public Refusal withProperty(String name, @Nullable Object value) {
        Map<String, @Nullable Object> properties = new LinkedHashMap<>(this.properties);
        properties.put(name, value);
        return new Refusal(
                this.policies,
                this.decisions,
                this.retryAfterSeconds,
                this.rateLimitPolicy,
                this.rateLimit,
                this.status,
                this.detail,
                properties);
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
}
