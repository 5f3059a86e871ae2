package dev.throttle.spring.web;

import java.net.InetSocketAddress;
import java.security.Principal;
import java.util.List;
import java.util.Optional;

import reactor.core.publisher.Mono;
import reactor.util.context.ContextView;

import org.springframework.http.HttpHeaders;
import org.springframework.web.filter.reactive.ServerWebExchangeContextFilter;
import org.springframework.web.server.ServerWebExchange;

import dev.throttle.spring.aop.PolicyDecision;
import dev.throttle.spring.aop.ReactiveThrottleRequestContext;
import dev.throttle.spring.aop.ThrottleRequestContext;

/**
 * The WebFlux exchange a reactive throttled call runs in, found in the subscriber's context (put
 * there by {@link ServerWebExchangeContextFilter}). {@code #ip} is the request's remote address,
 * which honours X-Forwarded-For only when the application configured
 * {@code server.forward-headers-strategy}.
 */
public final class WebFluxThrottleRequestContext implements ReactiveThrottleRequestContext {

	private final boolean writeHeaders;

	/**
	 * Creates a context.
	 * @param writeHeaders whether allowed calls get RateLimit headers
	 */
	public WebFluxThrottleRequestContext(boolean writeHeaders) {
		this.writeHeaders = writeHeaders;
	}

	@Override
	public Mono<ThrottleRequestContext> current(ContextView context) {
		Optional<ServerWebExchange> found = ServerWebExchangeContextFilter.getExchange(context);
		if (found.isEmpty()) {
			return Mono.just(ThrottleRequestContext.NONE);
		}
		ServerWebExchange exchange = found.get();
		String address = address(exchange.getRequest().getRemoteAddress());
		return exchange.getPrincipal()
			.map(Principal::getName)
			.map(Optional::of)
			.defaultIfEmpty(Optional.empty())
			.map((principal) -> new ExchangeContext(exchange, address, principal.orElse(null), this.writeHeaders));
	}

	private static String address(InetSocketAddress remote) {
		if (remote == null) {
			return null;
		}
		return (remote.getAddress() != null) ? remote.getAddress().getHostAddress() : remote.getHostString();
	}

	private record ExchangeContext(ServerWebExchange exchange, String clientAddress, String principalName,
			boolean writeHeaders) implements ThrottleRequestContext {

		@Override
		public void allowed(List<PolicyDecision> decisions) {
			if (this.writeHeaders && !this.exchange.getResponse().isCommitted()) {
				HttpHeaders headers = this.exchange.getResponse().getHeaders();
				// one line, one item per policy, even after a second throttled call in one exchange
				headers.set(RateLimitHeaders.POLICY, RateLimitItems
					.merged(headers.getFirst(RateLimitHeaders.POLICY), RateLimitHeaders.policy(decisions)));
				headers.set(RateLimitHeaders.LIMIT, RateLimitItems
					.merged(headers.getFirst(RateLimitHeaders.LIMIT), RateLimitHeaders.limit(decisions)));
			}
		}

	}

}
