package dev.throttle.spring.internal.web;

import dev.throttle.ThrottledException;
import dev.throttle.spring.bans.ActiveBan;
import dev.throttle.spring.web.RateLimitHeaders;
import dev.throttle.spring.web.Refusal;
import dev.throttle.spring.web.ThrottleExceptionHandler;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.Enumeration;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.core.Ordered;
import org.springframework.http.HttpHeaders;
import org.springframework.http.server.ServerHttpResponse;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.cors.CorsConfiguration;
import org.springframework.web.cors.CorsProcessor;
import org.springframework.web.cors.DefaultCorsProcessor;

/**
 * The servlet writer of a {@link Refusal}, for every entry point: Spring MVC's exception handling
 * (as {@code @ControllerAdvice}: an annotated handler, a {@code Throttler.check} in a controller),
 * the URL-rule filter and the Spring Security hook. It writes the refusal's status,
 * {@code Retry-After} and rate-limit headers, and either the {@code application/problem+json} body
 * or, for a browser that accepts {@code text/html} and not JSON,
 * {@link HttpServletResponse#sendError(int) sendError}, so that Spring Boot's error handling renders
 * the application's {@code error/429.html} (else {@code error/4xx}, else its own page) with that
 * status. The headers are set before the error dispatch and stay on its response.
 */
@ControllerAdvice
public final class ServletRefusals implements Ordered {

    private static final String PROBLEM_JSON = "application/problem+json";

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
    public ServletRefusals(ThrottleExceptionHandler handler, @Nullable BeanFactory beanFactory) {
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
     * Answers a refusal that left a handler.
     * @param ex the refusal
     * @param request the request
     * @param response the response
     * @throws IOException when the body cannot be written
     */
    @ExceptionHandler(ThrottledException.class)
    public void handleThrottled(ThrottledException ex, HttpServletRequest request, HttpServletResponse response)
            throws IOException {
        write(request, response, ex);
    }

    /**
     * Answers a refusal with the application's {@link ThrottleExceptionHandler#refusal}.
     * @param request the request (its {@code Accept} header chooses the body)
     * @param response the response; left alone if already committed
     * @param ex the refusal
     * @throws IOException when the body cannot be written
     */
    public void write(HttpServletRequest request, HttpServletResponse response, ThrottledException ex)
            throws IOException {
        write(request, response, ex, true);
    }

    /**
     * Answers a refusal with the application's {@link ThrottleExceptionHandler#refusal}.
     * @param request the request (its {@code Accept} header chooses the body)
     * @param response the response; left alone if already committed
     * @param ex the refusal
     * @param errorPage whether a browser may be shown the application's error page (else it gets
     * problem+json like any client)
     * @throws IOException when the body cannot be written
     */
    public void write(
            HttpServletRequest request, HttpServletResponse response, ThrottledException ex, boolean errorPage)
            throws IOException {
        if (!response.isCommitted()) {
            BanGate gate = this.bans;
            if (gate != null) {
                // counted before the answer, so that the request after the one that starts a ban is refused
                gate.refused(
                        new ServletHttpRulesFilter.Request(request, gate.ipv6Prefix()),
                        ex.getPolicy().name(),
                        gate.access().isSafelisted(request.getRemoteAddr()));
            }
            Refusal refusal = this.handler.refusal(ex);
            headers(response, refusal);
            answer(
                    request,
                    response,
                    refusal.status().value(),
                    refusal.detail(),
                    Refusals.problemJson(refusal, request.getRequestURI()),
                    errorPage);
        }
    }

    /**
     * Answers a request refused by a ban: its status, {@code Retry-After} = the ban's remaining time,
     * problem+json (or the error page for a browser).
     * @param request the request
     * @param response the response; left alone if already committed
     * @param gate the bans
     * @param ban the request's ban
     * @throws IOException when the body cannot be written
     */
    void writeBan(HttpServletRequest request, HttpServletResponse response, BanGate gate, ActiveBan ban)
            throws IOException {
        if (!response.isCommitted()) {
            Refusal refusal = gate.refusal(this.handler, ban);
            headers(response, refusal);
            answer(
                    request,
                    response,
                    refusal.status().value(),
                    refusal.detail(),
                    Refusals.problemJson(refusal, request.getRequestURI()),
                    true);
        }
    }

    /**
     * Answers a request from a blocked client address with 403: problem+json, or the 403 error
     * page for a browser.
     * @param request the request
     * @param response the response; left alone if already committed
     * @throws IOException when the body cannot be written
     */
    public static void forbid(HttpServletRequest request, HttpServletResponse response) throws IOException {
        if (!response.isCommitted()) {
            answer(
                    request,
                    response,
                    HttpServletResponse.SC_FORBIDDEN,
                    Refusals.FORBIDDEN_DETAIL,
                    Refusals.FORBIDDEN_JSON,
                    true);
        }
    }

    /**
     * Sets {@code Retry-After} and the rate-limit headers of a refusal, replacing any that an
     * earlier allowed call of the same request set.
     * @param response the response, or null
     * @param refusal the refusal
     */
    public static void headers(@Nullable HttpServletResponse response, Refusal refusal) {
        if (response == null || response.isCommitted()) {
            return;
        }
        refusal.retryAfterSeconds()
                .ifPresent((seconds) -> response.setHeader(HttpHeaders.RETRY_AFTER, Long.toString(seconds)));
        if (refusal.rateLimit() != null) {
            response.setHeader(RateLimitHeaders.POLICY, refusal.rateLimitPolicy());
            response.setHeader(RateLimitHeaders.LIMIT, refusal.rateLimit());
        }
    }

    /**
     * The CORS headers of a response decided before any handler mapping ran (a URL rule, a blocked
     * address), by Spring's own CORS processing, where the application's configuration allows the
     * origin: {@code Vary} is added to, the rate-limit headers exposed.
     * @param config the configuration that applies to the request, or null
     * @param request the request
     * @param response the response
     * @throws IOException never in practice: no body is written
     */
    public static void cors(
            @Nullable CorsConfiguration config, HttpServletRequest request, HttpServletResponse response)
            throws IOException {
        if (config != null) {
            CORS.processRequest(CorsExposure.exposing(config), request, response);
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

    /** The problem, or for a browser that may see it the error page, which Boot renders on sendError. */
    private static void answer(
            HttpServletRequest request,
            HttpServletResponse response,
            int status,
            String detail,
            String json,
            boolean errorPage)
            throws IOException {
        if (errorPage && prefersHtml(request)) {
            response.sendError(status, detail);
            return;
        }
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
        response.setStatus(status);
        response.setContentType(PROBLEM_JSON);
        response.setContentLength(bytes.length);
        response.getOutputStream().write(bytes);
        response.flushBuffer();
    }
}
