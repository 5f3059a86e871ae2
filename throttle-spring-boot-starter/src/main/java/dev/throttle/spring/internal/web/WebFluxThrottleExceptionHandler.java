package dev.throttle.spring.internal.web;

import reactor.core.publisher.Mono;

import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.server.ServerWebExchange;

import dev.throttle.ThrottledException;
import dev.throttle.spring.internal.aop.PolicyDecision;
import dev.throttle.spring.web.ThrottleExceptionHandler;

/**
 * The WebFlux answer to a refusal: {@link ThrottleExceptionHandler}'s problem+json for API clients,
 * and for a browser that accepts {@code text/html} and not JSON an error that Spring Boot's error
 * handling renders as the application's {@code error/429.html} (else its own page) with status 429,
 * the refusal's headers kept. The page is a second handler method that produces {@code text/html}
 * (content negotiation of {@code @ExceptionHandler}, Spring Framework 6.2+), since only WebFlux can
 * hand it the exchange. Registered by auto-configuration only.
 */
@ControllerAdvice
public class WebFluxThrottleExceptionHandler extends ThrottleExceptionHandler {

	private final boolean writeRateLimitHeaders;

	/**
	 * Creates the handler.
	 * @param writeRateLimitHeaders whether to send RateLimit-Policy and RateLimit
	 */
	public WebFluxThrottleExceptionHandler(boolean writeRateLimitHeaders) {
		super(writeRateLimitHeaders);
		this.writeRateLimitHeaders = writeRateLimitHeaders;
	}

	/**
	 * Turns a refusal into Boot's error page for a browser, or into the 429 problem for any other
	 * client that Spring's negotiation sends here.
	 * @param ex the refusal
	 * @param exchange the exchange
	 * @return the response
	 */
	@ExceptionHandler(exception = ThrottledException.class, produces = MediaType.TEXT_HTML_VALUE)
	public Mono<ResponseEntity<ProblemDetail>> handleThrottledPage(ThrottledException ex, ServerWebExchange exchange) {
		if (WebFluxRefusals.prefersHtml(exchange)) {
			WebFluxThrottleRequestContext.refusalHeaders(exchange.getResponse(),
					new PolicyDecision(ex.getPolicy(), ex.getDecision()), this.writeRateLimitHeaders);
			return Mono.error(new ResponseStatusException(HttpStatus.TOO_MANY_REQUESTS, Refusals.detail(ex)));
		}
		return Mono.justOrEmpty(handleThrottled(ex));
	}

}
