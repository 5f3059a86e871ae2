package dev.throttle.spring.internal.web;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.Enumeration;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import org.springframework.http.HttpHeaders;

import dev.throttle.ThrottledException;

/**
 * Answers a refusal on a servlet response, for code that runs outside Spring MVC's exception
 * handling (a servlet filter, a Spring Security hook): {@code 429} with {@code Retry-After} and the
 * {@code RateLimit-Policy} / {@code RateLimit} headers, and either an {@code application/problem+json}
 * body or, for a browser that accepts {@code text/html} and not JSON,
 * {@link HttpServletResponse#sendError(int) sendError(429)}, so that Spring Boot's error handling
 * renders the application's {@code error/429.html} (else {@code error/4xx}, else its own page)
 * with status 429. The headers are set before the error dispatch and stay on its response.
 */
public final class ServletRefusals {

	private static final String PROBLEM_JSON = "application/problem+json";

	// not HttpServletResponse.SC_TOO_MANY_REQUESTS: Servlet 6.0 (Boot 3.5) lacks it
	private static final int TOO_MANY_REQUESTS = 429;

	private ServletRefusals() {
	}

	/**
	 * Answers a refusal with 429 and the rate-limit headers.
	 * @param request the request (its {@code Accept} header chooses the body)
	 * @param response the response; left alone if already committed
	 * @param refusal the refusal
	 * @throws IOException when the body cannot be written
	 */
	public static void write(HttpServletRequest request, HttpServletResponse response, ThrottledException refusal)
			throws IOException {
		write(request, response, refusal, true);
	}

	/**
	 * Answers a refusal with 429.
	 * @param request the request (its {@code Accept} header chooses the body)
	 * @param response the response; left alone if already committed
	 * @param refusal the refusal
	 * @param rateLimitHeaders whether to send {@code RateLimit-Policy} and {@code RateLimit}
	 * ({@code Retry-After} is always sent when a later call can pass)
	 * @throws IOException when the body cannot be written
	 */
	public static void write(HttpServletRequest request, HttpServletResponse response, ThrottledException refusal,
			boolean rateLimitHeaders) throws IOException {
		if (response.isCommitted()) {
			return;
		}
		headers(response, refusal, rateLimitHeaders);
		if (prefersHtml(request)) {
			response.sendError(TOO_MANY_REQUESTS, Refusals.detail(refusal));
			return;
		}
		body(response, TOO_MANY_REQUESTS, Refusals.problemJson(refusal));
	}

	/**
	 * Answers a request from a blocked client address with 403: problem+json, or the 403 error
	 * page for a browser.
	 * @param request the request
	 * @param response the response; left alone if already committed
	 * @throws IOException when the body cannot be written
	 */
	public static void forbid(HttpServletRequest request, HttpServletResponse response) throws IOException {
		if (response.isCommitted()) {
			return;
		}
		if (prefersHtml(request)) {
			response.sendError(HttpServletResponse.SC_FORBIDDEN, Refusals.FORBIDDEN_DETAIL);
			return;
		}
		body(response, HttpServletResponse.SC_FORBIDDEN, Refusals.forbiddenJson());
	}

	/**
	 * Sets {@code Retry-After} and, if asked, the rate-limit headers of a refusal, replacing any
	 * that an earlier allowed call of the same request set.
	 * @param response the response
	 * @param refusal the refusal
	 * @param rateLimitHeaders whether to send {@code RateLimit-Policy} and {@code RateLimit}
	 */
	public static void headers(HttpServletResponse response, ThrottledException refusal, boolean rateLimitHeaders) {
		String retryAfter = Refusals.retryAfter(refusal);
		if (retryAfter != null) {
			response.setHeader(HttpHeaders.RETRY_AFTER, retryAfter);
		}
		if (rateLimitHeaders) {
			response.setHeader(RateLimitHeaders.POLICY, Refusals.rateLimitPolicy(refusal));
			response.setHeader(RateLimitHeaders.LIMIT, Refusals.rateLimit(refusal));
		}
	}

	/**
	 * Whether the request comes from a browser that asked for HTML and not JSON.
	 * @param request the request
	 * @return whether an error page suits it better than problem+json
	 */
	public static boolean prefersHtml(HttpServletRequest request) {
		Enumeration<String> accept = request.getHeaders(HttpHeaders.ACCEPT);
		return accept != null && Refusals.prefersHtml(Collections.list(accept));
	}

	private static void body(HttpServletResponse response, int status, String json) throws IOException {
		byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
		response.setStatus(status);
		response.setContentType(PROBLEM_JSON);
		response.setContentLength(bytes.length);
		response.getOutputStream().write(bytes);
		response.flushBuffer();
	}

}
