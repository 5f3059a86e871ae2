package dev.throttle.spring.internal.web;

import dev.throttle.ThrottledException;
import dev.throttle.spring.admission.Admission;
import dev.throttle.spring.admission.Charge;
import dev.throttle.spring.admission.PolicyDecision;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import java.net.InetSocketAddress;
import java.security.Principal;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.springframework.core.Ordered;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.web.cors.CorsConfiguration;
import org.springframework.web.cors.reactive.CorsConfigurationSource;
import org.springframework.web.cors.reactive.CorsUtils;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * The WebFlux filter of URL rules and of the blocklist, ordered before Spring Security's: the same
 * steps as {@link ServletHttpRulesFilter}, through the store's non-blocking API, so that no
 * event-loop thread waits on the store.
 */
public final class WebFluxHttpRulesFilter implements WebFilter, Ordered {

    private final HttpRulesFilterConfig<CorsConfigurationSource> config;

    private final WebFluxRefusals refusals;

    /**
     * Creates the filter.
     * @param config the rules, the client lists, the headers and CORS settings, and the filter's order
     * @param refusals answers a refused request
     */
    public WebFluxHttpRulesFilter(HttpRulesFilterConfig<CorsConfigurationSource> config, WebFluxRefusals refusals) {
        this.config = config;
        this.refusals = refusals;
    }

    @Override
    public int getOrder() {
        return this.config.order();
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        ServerHttpRequest request = exchange.getRequest();
        InetSocketAddress remote = request.getRemoteAddress();
        if (this.config.access().isBlocked(remote)) {
            cors(exchange);
            return WebFluxRefusals.forbid(exchange);
        }
        if (this.config.rules().isEmpty()
                || CorsUtils.isPreFlightRequest(request)
                || this.config.access().isSafelisted(remote)) {
            return chain.filter(exchange);
        }
        List<HttpRules.Matched> matched = this.config
                .rules()
                .match(request.getMethod().name(), request.getPath().pathWithinApplication());
        if (matched.isEmpty()) {
            return chain.filter(exchange);
        }
        Mono<Optional<String>> principal = this.config.rules().usePrincipal()
                ? exchange.getPrincipal()
                        .map(Principal::getName)
                        .map(Optional::of)
                        .defaultIfEmpty(Optional.empty())
                : Mono.just(Optional.empty());
        Headers headers = new Headers(exchange, this.config.writeHeaders());
        return principal.flatMap((name) -> {
            Request ruleRequest = new Request(exchange, name.orElse(null), this.config.ipv6Prefix());
            List<Charge> charges = HttpRules.charges(matched, ruleRequest);
            String[] keys = HttpRules.keys(matched, ruleRequest);
            return Mono.fromCompletionStage(() -> headers.admitAsync(charges, keys))
                    .onErrorResume(ThrottledException.class, (refusal) -> {
                        cors(exchange);
                        return this.refusals.write(exchange, refusal).then(Mono.empty());
                    })
                    .flatMap(WebFluxHttpRulesFilter::turn)
                    .flatMap((admission) -> admission.releasesAtEnd()
                            ? released(chain.filter(exchange), exchange, admission, headers)
                            : chain.filter(exchange)
                                    .then(Mono.defer(() -> costs(exchange, matched, admission)))
                                    .then(Mono.defer(() -> settle(exchange, admission, headers))));
        });
    }

    /**
     * A rule's policy with a wait: the request waits for its turn on a timer (never blocking an event
     * loop); a client that goes away meanwhile gives the turn back.
     */
    static Mono<Admission> turn(Admission admission) {
        long wait = admission.waitMillis();
        if (wait == 0) {
            return Mono.just(admission);
        }
        return Mono.delay(Duration.ofMillis(wait)).thenReturn(admission).doOnCancel(admission::refundAsync);
    }

    /**
     * A call that holds a concurrency slot releases it when the response is written, fails, or is
     * cancelled (the client went away): whichever comes first.
     */
    private Mono<Void> released(Mono<Void> call, ServerWebExchange exchange, Admission admission, Headers headers) {
        return call.onErrorResume((error) ->
                        Mono.fromCompletionStage(admission::failedAsync).then(Mono.error(error)))
                .then(Mono.defer(() -> {
                    HttpStatusCode status = exchange.getResponse().getStatusCode();
                    return (status != null && status.isError())
                            ? Mono.fromCompletionStage(admission::failedAsync)
                            : Mono.fromCompletionStage(() -> headers.succeededAsync(admission));
                }))
                .doOnCancel(admission::failedAsync);
    }

    /** What the response's headers say the request cost, for the rules that read one. */
    private static Mono<Void> costs(ServerWebExchange exchange, List<HttpRules.Matched> matched, Admission admission) {
        long[] costs = HttpRules.actualCosts(
                matched, (name) -> exchange.getResponse().getHeaders().getFirst(name));
        return (costs != null) ? Mono.fromCompletionStage(() -> admission.settleCostsAsync(costs)) : Mono.empty();
    }

    private Mono<Void> settle(ServerWebExchange exchange, Admission admission, Headers headers) {
        HttpStatusCode status = exchange.getResponse().getStatusCode();
        if ((status != null && status.isError()) || !admission.settlesOnSuccess()) {
            return Mono.empty();
        }
        return Mono.fromCompletionStage(() -> headers.succeededAsync(admission));
    }

    /** The CORS headers of a refusal, where the application's CORS configuration allows the origin. */
    private void cors(ServerWebExchange exchange) {
        if (!CorsUtils.isCorsRequest(exchange.getRequest())) {
            return;
        }
        for (CorsConfigurationSource source : this.config.corsSources().get()) {
            CorsConfiguration cors = source.getCorsConfiguration(exchange);
            if (cors != null) {
                WebFluxRefusals.cors(cors, exchange);
                return;
            }
        }
    }

    record Request(ServerWebExchange exchange, @Nullable String principal, int ipv6Prefix)
            implements HttpRule.RuleRequest {

        @Override
        public @Nullable String ip() {
            return ClientAddresses.key(this.exchange.getRequest().getRemoteAddress(), this.ipv6Prefix);
        }

        @Override
        public Object request() {
            return this.exchange.getRequest();
        }

        @Override
        public @Nullable String header(String name) {
            return this.exchange.getRequest().getHeaders().getFirst(name);
        }

        @Override
        public @Nullable String param(String name) {
            // WebFlux decodes query parameters itself
            return this.exchange.getRequest().getQueryParams().getFirst(name);
        }
    }

    /** Writes the rate-limit headers of the rules' decisions while the response is open. */
    private record Headers(ServerWebExchange exchange, boolean writeHeaders) implements ThrottleRequestContext {

        @Override
        public void allowed(List<PolicyDecision> decisions) {
            if (this.writeHeaders) {
                WebFluxThrottleRequestContext.addHeaders(this.exchange.getResponse(), decisions);
            }
        }
    }
}
