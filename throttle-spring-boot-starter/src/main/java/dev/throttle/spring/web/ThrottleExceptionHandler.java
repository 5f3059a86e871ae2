package dev.throttle.spring.web;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.util.List;

import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;

import org.springframework.core.Ordered;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.util.ClassUtils;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;

import dev.throttle.Decision;
import dev.throttle.ThrottledException;
import dev.throttle.spring.admission.PolicyDecision;
import dev.throttle.spring.internal.web.RateLimitHeaders;
import dev.throttle.spring.internal.web.RefusalHandlerOrder;
import dev.throttle.spring.internal.web.ServletRefusals;

/**
 * Answers a {@link ThrottledException} with {@code 429 Too Many Requests}: {@code Retry-After} in
 * whole seconds rounded up, the rate-limit headers, and an {@code application/problem+json} body
 * whose {@code violated-policies} names the policy. Works for Spring MVC and WebFlux.
 *
 * <p>Registered by auto-configuration, never found by component scanning; declare a bean of this
 * type (a subclass, say) to replace it.
 */
@ControllerAdvice
public class ThrottleExceptionHandler implements Ordered, BeanFactoryAware {

	private static final boolean servletPresent = ClassUtils.isPresent("jakarta.servlet.http.HttpServletResponse",
			ThrottleExceptionHandler.class.getClassLoader());

	/** The problem type of a refusal (RFC 9457 registry). */
	public static final URI QUOTA_EXCEEDED = URI.create("https://iana.org/assignments/http-problem-types#quota-exceeded");

	private static final MediaType PROBLEM_JSON = MediaType.APPLICATION_PROBLEM_JSON;

	private final boolean writeRateLimitHeaders;

	private final RefusalHandlerOrder order = new RefusalHandlerOrder(ThrottleExceptionHandler.class);

	/**
	 * Creates a handler.
	 * @param writeRateLimitHeaders whether to send RateLimit-Policy and RateLimit
	 */
	public ThrottleExceptionHandler(boolean writeRateLimitHeaders) {
		this.writeRateLimitHeaders = writeRateLimitHeaders;
	}

	@Override
	public void setBeanFactory(BeanFactory beanFactory) {
		this.order.setBeanFactory(beanFactory);
	}

	/**
	 * Ahead of the application's advice, so that a catch-all {@code @ExceptionHandler(Exception.class)}
	 * does not answer a refusal with a 500; behind it when the application has its own
	 * {@code @ExceptionHandler(ThrottledException.class)}, which then wins (the refusal's headers are
	 * on the response already, set where it was decided).
	 * @return the order
	 */
	@Override
	public int getOrder() {
		return this.order.get();
	}

	/**
	 * Turns a refusal into a 429 response.
	 * @param ex the refusal
	 * @return the response
	 */
	@ExceptionHandler(ThrottledException.class)
	public @Nullable ResponseEntity<ProblemDetail> handleThrottled(ThrottledException ex) {
		if (servletPresent && ServletPage.sent(ex, this.writeRateLimitHeaders)) {
			// a browser asking for HTML: Spring Boot's error page (error/429.html) renders it
			return null;
		}
		Decision decision = ex.getDecision();
		ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.TOO_MANY_REQUESTS, detail(ex));
		problem.setType(QUOTA_EXCEEDED);
		problem.setTitle("Too Many Requests");
		problem.setProperty("violated-policies", List.of(ex.getPolicy().name()));
		HttpHeaders headers = new HttpHeaders();
		if (decision.canSucceedLater()) {
			headers.set(HttpHeaders.RETRY_AFTER, Long.toString(Math.max(1, decision.retryAfterSeconds())));
		}
		if (this.writeRateLimitHeaders) {
			List<PolicyDecision> decisions = List.of(new PolicyDecision(ex.getPolicy(), decision));
			headers.set(RateLimitHeaders.POLICY, RateLimitHeaders.policy(decisions));
			headers.set(RateLimitHeaders.LIMIT, RateLimitHeaders.limit(decisions));
		}
		// the builder, not a constructor: its signatures are the same on Spring Framework 6 and 7
		return ResponseEntity.status(HttpStatus.TOO_MANY_REQUESTS).headers(headers).contentType(PROBLEM_JSON).body(problem);
	}

	/**
	 * The problem's {@code detail}: says which policy refused and for how long, never the key.
	 * @param ex the refusal
	 * @return the detail
	 */
	protected String detail(ThrottledException ex) {
		Decision decision = ex.getDecision();
		if (!decision.canSucceedLater()) {
			return "This request costs more than policy '" + ex.getPolicy().name() + "' can ever grant.";
		}
		long seconds = Math.max(1, decision.retryAfterSeconds());
		return "Too many requests under policy '" + ex.getPolicy().name() + "'; retry after " + seconds
				+ ((seconds == 1) ? " second." : " seconds.");
	}

	/** Kept apart so that the handler loads without the Servlet API (WebFlux). */
	private static final class ServletPage {

		static boolean sent(ThrottledException ex, boolean writeRateLimitHeaders) {
			if (!(RequestContextHolder.getRequestAttributes() instanceof ServletRequestAttributes servlet)
					|| servlet.getResponse() == null || !ServletRefusals.prefersHtml(servlet.getRequest())) {
				return false;
			}
			try {
				ServletRefusals.write(servlet.getRequest(), servlet.getResponse(), ex, writeRateLimitHeaders);
			}
			catch (IOException failed) {
				throw new UncheckedIOException(failed);
			}
			return true;
		}

	}

}
