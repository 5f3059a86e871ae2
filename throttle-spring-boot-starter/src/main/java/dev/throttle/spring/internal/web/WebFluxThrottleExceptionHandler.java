package dev.throttle.spring.internal.web;

import reactor.core.publisher.Mono;

import org.springframework.beans.factory.BeanFactory;
import org.springframework.core.Ordered;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.server.ServerWebExchange;

import dev.throttle.ThrottledException;
import dev.throttle.spring.admission.PolicyDecision;
import dev.throttle.spring.web.ThrottleExceptionHandler;

/**
 * The WebFlux answer to a refusal, which needs the exchange that {@link ThrottleExceptionHandler}
 * (shared with Spring MVC) cannot declare: for a browser that accepts {@code text/html} and not
 * JSON, an error that Spring Boot's error handling renders as the application's
 * {@code error/429.html} (else its own page) with status 429, the refusal's headers kept; for any
 * other client, the application's {@link ThrottleExceptionHandler} (the starter's, or the subclass
 * the application declared). Ordered like it and registered before it, so that it answers first,
 * and after the application's own {@code @ExceptionHandler(ThrottledException.class)}.
 */
@ControllerAdvice
public final class WebFluxThrottleExceptionHandler implements Ordered {

	private final ThrottleExceptionHandler problems;

	private final boolean writeRateLimitHeaders;

	private final RefusalHandlerOrder order = new RefusalHandlerOrder(ThrottleExceptionHandler.class);

	/**
	 * Creates the handler.
	 * @param problems answers API clients
	 * @param writeRateLimitHeaders whether to send RateLimit-Policy and RateLimit
	 * @param beanFactory the application's beans, among which its own refusal handler is looked for
	 */
	public WebFluxThrottleExceptionHandler(ThrottleExceptionHandler problems, boolean writeRateLimitHeaders,
			BeanFactory beanFactory) {
		this.problems = problems;
		this.writeRateLimitHeaders = writeRateLimitHeaders;
		this.order.setBeanFactory(beanFactory);
	}

	@Override
	public int getOrder() {
		return this.order.get();
	}

	/**
	 * Turns a refusal into Boot's error page for a browser, or into the 429 problem.
	 * @param ex the refusal
	 * @param exchange the exchange
	 * @return the response
	 */
	@ExceptionHandler(ThrottledException.class)
	public Mono<ResponseEntity<ProblemDetail>> handleThrottled(ThrottledException ex, ServerWebExchange exchange) {
		if (WebFluxRefusals.prefersHtml(exchange)) {
			WebFluxThrottleRequestContext.refusalHeaders(exchange.getResponse(),
					new PolicyDecision(ex.getPolicy(), ex.getDecision()), this.writeRateLimitHeaders);
			return Mono.error(new ResponseStatusException(HttpStatus.TOO_MANY_REQUESTS, Refusals.detail(ex)));
		}
		return Mono.justOrEmpty(this.problems.handleThrottled(ex));
	}

}
