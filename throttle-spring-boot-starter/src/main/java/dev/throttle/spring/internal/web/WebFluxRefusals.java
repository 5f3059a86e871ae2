package dev.throttle.spring.internal.web;

import java.nio.charset.StandardCharsets;

import reactor.core.publisher.Mono;

import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.server.ServerWebExchange;

import dev.throttle.ThrottledException;
import dev.throttle.spring.admission.PolicyDecision;

/**
 * Answers a refusal on a WebFlux exchange outside the handler's exception handling (a
 * {@code WebFilter}): {@code 429} with {@code Retry-After} and the rate-limit headers, and an
 * {@code application/problem+json} body, or, for a browser that accepts {@code text/html} and not
 * JSON, an error that Spring Boot's error handling renders as the application's
 * {@code error/429.html} (else its own page) with status 429, the headers kept.
 */
public final class WebFluxRefusals {

	private WebFluxRefusals() {
	}

	/**
	 * Answers a refusal.
	 * @param exchange the exchange
	 * @param refusal the refusal
	 * @param rateLimitHeaders whether to send {@code RateLimit-Policy} and {@code RateLimit}
	 * @return completes when the response is written, or fails for Boot's error page
	 */
	public static Mono<Void> write(ServerWebExchange exchange, ThrottledException refusal, boolean rateLimitHeaders) {
		ServerHttpResponse response = exchange.getResponse();
		if (response.isCommitted()) {
			return Mono.empty();
		}
		WebFluxThrottleRequestContext.refusalHeaders(response,
				new PolicyDecision(refusal.getPolicy(), refusal.getDecision()), rateLimitHeaders);
		if (prefersHtml(exchange)) {
			return Mono.error(new ResponseStatusException(HttpStatus.TOO_MANY_REQUESTS, Refusals.detail(refusal)));
		}
		return body(response, HttpStatus.TOO_MANY_REQUESTS, Refusals.problemJson(refusal));
	}

	/**
	 * Answers a request from a blocked client address with 403.
	 * @param exchange the exchange
	 * @return completes when the response is written, or fails for Boot's error page
	 */
	public static Mono<Void> forbid(ServerWebExchange exchange) {
		if (exchange.getResponse().isCommitted()) {
			return Mono.empty();
		}
		if (prefersHtml(exchange)) {
			return Mono.error(new ResponseStatusException(HttpStatus.FORBIDDEN, Refusals.FORBIDDEN_DETAIL));
		}
		return body(exchange.getResponse(), HttpStatus.FORBIDDEN, Refusals.forbiddenJson());
	}

	/**
	 * Whether the request comes from a browser that asked for HTML and not JSON.
	 * @param exchange the exchange
	 * @return whether an error page suits it better than problem+json
	 */
	public static boolean prefersHtml(ServerWebExchange exchange) {
		// getValuesAsList, not get: HttpHeaders.get(String) is not in Spring Framework 6 (Boot 3.5)
		return Refusals.prefersHtml(exchange.getRequest().getHeaders().getValuesAsList(HttpHeaders.ACCEPT));
	}

	private static Mono<Void> body(ServerHttpResponse response, HttpStatus status, String json) {
		byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
		response.setStatusCode(status);
		response.getHeaders().setContentType(MediaType.APPLICATION_PROBLEM_JSON);
		response.getHeaders().setContentLength(bytes.length);
		DataBuffer buffer = response.bufferFactory().wrap(bytes);
		return response.writeWith(Mono.just(buffer));
	}

}
