package dev.throttle.spring.internal.web;

import dev.throttle.ThrottledException;
import dev.throttle.spring.bans.ActiveBan;
import dev.throttle.spring.web.RateLimitHeaders;
import dev.throttle.spring.web.Refusal;
import dev.throttle.spring.web.ThrottleExceptionHandler;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.core.Ordered;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.cors.CorsConfiguration;
import org.springframework.web.cors.reactive.CorsProcessor;
import org.springframework.web.cors.reactive.DefaultCorsProcessor;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * The WebFlux writer of a {@link Refusal}, for every entry point: WebFlux's exception handling (as
 * {@code @ControllerAdvice}: an annotated handler, a {@code Throttler.check} in a controller) and
 * the URL-rule filter. It writes the refusal's status, {@code Retry-After} and rate-limit headers,
 * and an {@code application/problem+json} body or, for a browser that accepts {@code text/html}
 * and not JSON, an error that Spring Boot's error handling renders as the application's
 * {@code error/429.html} (else its own page) with that status, the headers kept.
 */
@ControllerAdvice
public final class WebFluxRefusals implements Ordered {

    /** Spring's CORS processing, except that an origin it would reject leaves the refusal as it is. */
    private static final CorsProcessor CORS = new DefaultCorsProcessor() {

        @Override
        protected void rejectRequest(ServerHttpResponse response) {}
    };

    private final ThrottleExceptionHandler handler;

    private final AdviceOrder order;

    /** Counts refusals towards the bans, or null without bans. */
    private volatile @Nullable BanGate bans;

    /**
     * Creates the writer.
     * @param handler builds the refusal that is written
     * @param beanFactory the application's beans, among which its own refusal handler is looked for
     */
    public WebFluxRefusals(ThrottleExceptionHandler handler, @Nullable BeanFactory beanFactory) {
        this.handler = handler;
        this.order = new AdviceOrder(beanFactory);
    }

    /**
     * Counts each refusal written here towards the bans that list its policy.
     * @param bans the bans, or null for none
     */
    public void setBans(@Nullable BanGate bans) {
        this.bans = (bans != null && !bans.isEmpty()) ? bans : null;
    }

    @Override
    public int getOrder() {
        return this.order.get();
    }

    /**
     * Answers a refusal that left a handler. A result, not the response written here: an error for
     * Boot's error page is rendered only when it comes from a handler's result.
     * @param ex the refusal
     * @param exchange the exchange
     * @return the problem, or an error for Boot's error page
     */
    @ExceptionHandler(ThrottledException.class)
    public Mono<ResponseEntity<byte[]>> handleThrottled(ThrottledException ex, ServerWebExchange exchange) {
        return counted(exchange, ex).then(Mono.defer(() -> {
            Refusal refusal = this.handler.refusal(ex);
            return answer(exchange, refusal)
                    .map((json) -> ResponseEntity.status(refusal.status())
                            .contentType(MediaType.APPLICATION_PROBLEM_JSON)
                            .body(json));
        }));
    }

    /**
     * Counts a refusal towards the bans before it is answered (so that the request after the one
     * that starts a ban is refused), through the store's non-blocking API.
     */
    private Mono<Void> counted(ServerWebExchange exchange, ThrottledException ex) {
        BanGate gate = this.bans;
        if (gate == null) {
            return Mono.empty();
        }
        return Mono.fromCompletionStage(() -> gate.refusedAsync(
                new WebFluxHttpRulesFilter.Request(exchange, null, gate.ipv6Prefix()),
                ex.getPolicy().name(),
                gate.access().isSafelisted(exchange.getRequest().getRemoteAddress())));
    }

    /**
     * Answers a request refused by a ban: its status, {@code Retry-After} = the ban's remaining time,
     * problem+json (or an error for Boot's error page for a browser).
     */
    Mono<Void> writeBan(ServerWebExchange exchange, BanGate gate, ActiveBan ban) {
        ServerHttpResponse response = exchange.getResponse();
        if (response.isCommitted()) {
            return Mono.empty();
        }
        Refusal refusal = gate.refusal(this.handler, ban);
        return answer(exchange, refusal).flatMap((json) -> body(response, refusal.status(), json));
    }

    /**
     * Answers a refusal with the application's {@link ThrottleExceptionHandler#refusal}.
     * @param exchange the exchange; left alone if its response is already committed
     * @param ex the refusal
     * @return completes when the response is written, or fails for Boot's error page
     */
    public Mono<Void> write(ServerWebExchange exchange, ThrottledException ex) {
        ServerHttpResponse response = exchange.getResponse();
        if (response.isCommitted()) {
            return Mono.empty();
        }
        return counted(exchange, ex).then(Mono.defer(() -> {
            Refusal refusal = this.handler.refusal(ex);
            return answer(exchange, refusal).flatMap((json) -> body(response, refusal.status(), json));
        }));
    }

    /** Sets the headers, then gives the problem for an API client, or an error for Boot's error page. */
    private static Mono<byte[]> answer(ServerWebExchange exchange, Refusal refusal) {
        headers(exchange.getResponse(), refusal);
        if (prefersHtml(exchange)) {
            return Mono.error(new ResponseStatusException(refusal.status(), refusal.detail()));
        }
        String json =
                Refusals.problemJson(refusal, exchange.getRequest().getPath().value());
        return Mono.just(json.getBytes(StandardCharsets.UTF_8));
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
        return body(
                exchange.getResponse(), HttpStatus.FORBIDDEN, Refusals.FORBIDDEN_JSON.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Sets {@code Retry-After} and the rate-limit headers of a refusal, replacing any that an
     * earlier allowed call of the same exchange set.
     * @param response the response
     * @param refusal the refusal
     */
    public static void headers(ServerHttpResponse response, Refusal refusal) {
        if (response.isCommitted()) {
            return;
        }
        HttpHeaders headers = response.getHeaders();
        refusal.retryAfterSeconds()
                .ifPresent((seconds) -> headers.set(HttpHeaders.RETRY_AFTER, Long.toString(seconds)));
        if (refusal.rateLimit() != null) {
            headers.set(RateLimitHeaders.POLICY, refusal.rateLimitPolicy());
            headers.set(RateLimitHeaders.LIMIT, refusal.rateLimit());
        }
    }

    /**
     * The CORS headers of a response decided before any handler mapping ran (a URL rule, a blocked
     * address), by Spring's own CORS processing, where the application's configuration allows the
     * origin: {@code Vary} is added to, the rate-limit headers exposed.
     * @param config the configuration that applies to the request, or null
     * @param exchange the exchange
     */
    public static void cors(@Nullable CorsConfiguration config, ServerWebExchange exchange) {
        if (config != null) {
            CORS.process(CorsExposure.exposing(config), exchange);
        }
    }

    /** Whether the request comes from a browser that asked for HTML and not JSON. */
    private static boolean prefersHtml(ServerWebExchange exchange) {
        // getValuesAsList, not get: HttpHeaders.get(String) is not in Spring Framework 6 (Boot 3.5)
        return Refusals.prefersHtml(exchange.getRequest().getHeaders().getValuesAsList(HttpHeaders.ACCEPT));
    }

    private static Mono<Void> body(ServerHttpResponse response, HttpStatusCode status, byte[] bytes) {
        response.setStatusCode(status);
        response.getHeaders().setContentType(MediaType.APPLICATION_PROBLEM_JSON);
        response.getHeaders().setContentLength(bytes.length);
        DataBuffer buffer = response.bufferFactory().wrap(bytes);
        return response.writeWith(Mono.just(buffer));
    }
}
