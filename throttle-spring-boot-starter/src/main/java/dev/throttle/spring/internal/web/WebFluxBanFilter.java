package dev.throttle.spring.internal.web;

import dev.throttle.spring.bans.ActiveBan;
import org.springframework.core.Ordered;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * The WebFlux filter of bans, ordered before the URL rules and Spring Security: the same as
 * {@link ServletBanFilter}, from memory, so that no event-loop thread waits on anything.
 */
public final class WebFluxBanFilter implements WebFilter, Ordered {

    private final BanGate gate;

    private final WebFluxRefusals refusals;

    private final int order;

    /**
     * Creates the filter.
     * @param gate the bans
     * @param refusals answers a banned request
     * @param order the filter's order
     */
    public WebFluxBanFilter(BanGate gate, WebFluxRefusals refusals, int order) {
        this.gate = gate;
        this.refusals = refusals;
        this.order = order;
    }

    @Override
    public int getOrder() {
        return this.order;
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        if (this.gate.bans().anyActive()) {
            ActiveBan ban = this.gate.check(
                    new WebFluxHttpRulesFilter.Request(exchange, null, this.gate.ipv6Prefix()),
                    this.gate.access().isSafelisted(exchange.getRequest().getRemoteAddress()));
            if (ban != null) {
                return this.refusals.writeBan(exchange, this.gate, ban);
            }
        }
        return chain.filter(exchange);
    }
}
