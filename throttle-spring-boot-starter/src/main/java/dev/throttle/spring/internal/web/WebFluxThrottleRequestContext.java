package dev.throttle.spring.internal.web;

import dev.throttle.spring.admission.PolicyDecision;
import dev.throttle.spring.internal.aop.EarlyDecisions;
import dev.throttle.spring.internal.request.ReactiveThrottleRequestContext;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import dev.throttle.spring.web.RateLimitHeaders;
import dev.throttle.spring.web.Refusal;
import java.net.InetSocketAddress;
import java.security.Principal;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.filter.reactive.ServerWebExchangeContextFilter;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;
import reactor.util.context.ContextView;

/**
 * The WebFlux exchange a reactive throttled call runs in, found in the subscriber's context (put
 * there by {@link ServerWebExchangeContextFilter}). {@code #ip} is the request's remote address,
 * an IPv6 address grouped by its prefix (a /64 by default), which honours X-Forwarded-For only
 * when the application configured {@code server.forward-headers-strategy}.
 */
public final class WebFluxThrottleRequestContext extends WebRequestContext implements ReactiveThrottleRequestContext {

    /**
     * Creates a context.
     * @param writeHeaders whether allowed calls get RateLimit headers
     * @param ipv6Prefix the leading bits of an IPv6 client address that {@code #ip} keeps (1 to 128)
     * @param access the safelisted client addresses, never throttled
     */
    public WebFluxThrottleRequestContext(boolean writeHeaders, int ipv6Prefix, ClientAccess access) {
        super(writeHeaders, ipv6Prefix, access);
    }

    @Override
    public Mono<ThrottleRequestContext> current(ContextView context) {
        Optional<ServerWebExchange> found = ServerWebExchangeContextFilter.getExchange(context);
        if (found.isEmpty()) {
            return Mono.just(ThrottleRequestContext.NONE);
        }
        ServerWebExchange exchange = found.get();
        // a handler decided before its arguments were resolved: its advice claims that decision
        // through the context it was made with (after every web filter), not one built again alike
        ThrottleRequestContext decided = EarlyDecisions.requestOf(exchange.getAttribute(EarlyDecisions.ATTRIBUTE));
        if (decided != null) {
            return Mono.just(decided);
        }
        InetSocketAddress remote = exchange.getRequest().getRemoteAddress();
        String address = ClientAddresses.key(remote, this.ipv6Prefix);
        boolean safelisted = this.access.isSafelisted(remote);
        return exchange.getPrincipal()
                .map(Principal::getName)
                .map(Optional::of)
                .defaultIfEmpty(Optional.empty())
                .map((principal) ->
                        new ExchangeContext(exchange, address, principal.orElse(null), this.writeHeaders, safelisted));
    }

    private record ExchangeContext(
            ServerWebExchange exchange,
            String clientAddress,
            String principalName,
            boolean writeHeaders,
            boolean safelisted)
            implements ThrottleRequestContext {

        @Override
        public void refused(PolicyDecision refusal) {
            WebFluxRefusals.headers(
                    this.exchange.getResponse(), Refusal.of(refusal.policy(), refusal.decision(), this.writeHeaders));
        }

        @Override
        public void allowed(List<PolicyDecision> decisions) {
            if (this.writeHeaders) {
                addHeaders(this.exchange.getResponse(), decisions);
            }
        }

        @Override
        public @Nullable Object getAttribute(String name) {
            return this.exchange.getAttribute(name);
        }

        @Override
        public boolean atEnd(Runnable action) {
            WebFluxExchangeEnds.atEnd(this.exchange, action);
            return true;
        }

        @Override
        public int responseStatus() {
            HttpStatusCode status = this.exchange.getResponse().getStatusCode();
            return (status != null) ? status.value() : 0;
        }

        @Override
        public void removeAttribute(String name) {
            this.exchange.getAttributes().remove(name);
        }
    }

    /**
     * Adds the rate-limit headers of allowed decisions while the response is open: one line, one
     * item per policy, even after a second throttled call (or a URL rule) in one exchange.
     * @param response the response
     * @param decisions the decisions of the enforcing policies
     */
    static void addHeaders(ServerHttpResponse response, List<PolicyDecision> decisions) {
        // no enforcing policy decided (all in shadow mode): no headers, rather than empty ones
        if (response.isCommitted() || decisions.isEmpty()) {
            return;
        }
        HttpHeaders headers = response.getHeaders();
        headers.set(
                RateLimitHeaders.POLICY,
                RateLimitItems.merged(headers.getFirst(RateLimitHeaders.POLICY), RateLimitHeaders.policy(decisions)));
        headers.set(
                RateLimitHeaders.LIMIT,
                RateLimitItems.merged(headers.getFirst(RateLimitHeaders.LIMIT), RateLimitHeaders.limit(decisions)));
    }
}
