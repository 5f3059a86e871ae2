package dev.throttle.spring.internal.web;

import dev.throttle.ThrottledException;
import dev.throttle.spring.admission.Admission;
import dev.throttle.spring.admission.Charge;
import dev.throttle.spring.admission.PolicyDecision;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.security.Principal;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.http.server.RequestPath;
import org.springframework.util.MultiValueMap;
import org.springframework.web.cors.CorsConfiguration;
import org.springframework.web.cors.CorsConfigurationSource;
import org.springframework.web.cors.CorsUtils;
import org.springframework.web.util.UriComponentsBuilder;
import org.springframework.web.util.UriUtils;

/**
 * The servlet filter of URL rules and of the blocklist, ordered before Spring Security's filter
 * chain: a blocked client address is answered 403 on every request; a safelisted one passes
 * untouched; any other request is charged by every rule it matches, in order (a later refusal gives
 * back what the earlier rules took), and refused with 429 before authentication, handler mapping
 * and binding run. A request that completes below 400 settles each policy by its
 * {@code reset-on-success} / {@code count}.
 */
public final class ServletHttpRulesFilter extends OrderedRequestFilter {

    private final HttpRulesFilterConfig<CorsConfigurationSource> config;

    private final ServletRefusals refusals;

    /**
     * Creates the filter.
     * @param config the rules, the client lists, the headers and CORS settings, and the filter's order
     * @param refusals answers a refused request
     */
    public ServletHttpRulesFilter(HttpRulesFilterConfig<CorsConfigurationSource> config, ServletRefusals refusals) {
        super(config.order());
        this.config = config;
        this.refusals = refusals;
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        String address = request.getRemoteAddr();
        if (this.config.access().isBlocked(address)) {
            cors(request, response);
            ServletRefusals.forbid(request, response);
            return;
        }
        if (this.config.rules().isEmpty()
                || CorsUtils.isPreFlightRequest(request)
                || this.config.access().isSafelisted(address)) {
            chain.doFilter(request, response);
            return;
        }
        RequestPath path = RequestPath.parse(request.getRequestURI(), request.getContextPath());
        List<HttpRules.Matched> matched = this.config.rules().match(request.getMethod(), path.pathWithinApplication());
        if (matched.isEmpty()) {
            chain.doFilter(request, response);
            return;
        }
        Request ruleRequest = new Request(request, this.config.ipv6Prefix());
        List<Charge> charges = HttpRules.charges(matched, ruleRequest);
        String[] keys = HttpRules.keys(matched, ruleRequest);
        Headers headers = new Headers(response, this.config.writeHeaders());
        Admission admission;
        try {
            // a rule's policy with a wait: the request sleeps on its own thread until its turn
            admission = headers.admit(charges, keys).awaitTurn();
        } catch (ThrottledException refusal) {
            cors(request, response);
            this.refusals.write(request, response, refusal);
            return;
        }
        if (!admission.releasesAtEnd()) {
            chain.doFilter(request, response);
            if (request.isAsyncStarted()) {
                if (charges.stream().anyMatch(Charge::settlesOnSuccess) || readsActualCost(matched)) {
                    request.getAsyncContext().addListener(new Settlement(admission, matched));
                }
                return;
            }
            settleCosts(admission, matched, response);
            if (response.getStatus() < 400 && charges.stream().anyMatch(Charge::settlesOnSuccess)) {
                headers.succeeded(admission);
            }
            return;
        }
        // a concurrency slot is released when the response completes, however it ends
        try {
            chain.doFilter(request, response);
        } catch (IOException | ServletException | RuntimeException | Error ex) {
            admission.failed();
            throw ex;
        }
        if (request.isAsyncStarted()) {
            request.getAsyncContext().addListener(new Settlement(admission, matched));
        } else if (response.getStatus() < 400) {
            headers.succeeded(admission);
        } else {
            admission.failed();
        }
    }

    private static boolean readsActualCost(List<HttpRules.Matched> matched) {
        for (HttpRules.Matched match : matched) {
            if (match.rule().actualCostHeader() != null) {
                return true;
            }
        }
        return false;
    }

    /** What the response's headers say the request cost, for the rules that read one (before the call ends). */
    private static void settleCosts(
            Admission admission, List<HttpRules.Matched> matched, HttpServletResponse response) {
        long[] costs = HttpRules.actualCosts(matched, response::getHeader);
        if (costs != null) {
            admission.settleCosts(costs);
        }
    }

    /** The CORS headers of a refusal, where the application's CORS configuration allows the origin. */
    private void cors(HttpServletRequest request, HttpServletResponse response) throws IOException {
        if (!CorsUtils.isCorsRequest(request)) {
            return;
        }
        for (CorsConfigurationSource source : this.config.corsSources().get()) {
            CorsConfiguration cors;
            try {
                cors = source.getCorsConfiguration(request);
            } catch (RuntimeException ex) {
                continue;
            }
            if (cors != null) {
                ServletRefusals.cors(cors, request, response);
                return;
            }
        }
    }

    /** The request as a rule's key reads it; the query is parsed only if a key reads a parameter. */
    static final class Request implements HttpRule.RuleRequest {

        private final HttpServletRequest request;

        private final int ipv6Prefix;

        private @Nullable MultiValueMap<String, String> params;

        Request(HttpServletRequest request, int ipv6Prefix) {
            this.request = request;
            this.ipv6Prefix = ipv6Prefix;
        }

        @Override
        public @Nullable String ip() {
            return ClientAddresses.key(this.request.getRemoteAddr(), this.ipv6Prefix);
        }

        @Override
        public @Nullable String principal() {
            Principal principal = this.request.getUserPrincipal();
            return (principal != null) ? principal.getName() : null;
        }

        @Override
        public Object request() {
            return this.request;
        }

        @Override
        public @Nullable String header(String name) {
            return this.request.getHeader(name);
        }

        /** A query parameter, decoded; never the body's form fields (reading them would consume the body). */
        @Override
        public @Nullable String param(String name) {
            if (this.params == null) {
                String query = this.request.getQueryString();
                this.params =
                        UriComponentsBuilder.newInstance().query(query).build().getQueryParams();
            }
            String value = this.params.getFirst(name);
            return (value != null)
                    ? UriUtils.decode(value.replace('+', ' '), java.nio.charset.StandardCharsets.UTF_8)
                    : null;
        }
    }

    /** Writes the rate-limit headers of the rules' decisions (and of their reset states). */
    private record Headers(HttpServletResponse response, boolean writeHeaders) implements ThrottleRequestContext {

        @Override
        public void allowed(List<PolicyDecision> decisions) {
            if (this.writeHeaders) {
                ServletThrottleRequestContext.addHeaders(this.response, decisions);
            }
        }
    }

    /**
     * Settles an asynchronous request when it completes below 400; any other end (an error status,
     * a time-out, an error such as a client gone mid-stream) ends it as failed, which releases a
     * concurrency slot. Whichever comes first ends the call; the others do nothing.
     */
    private record Settlement(Admission admission, List<HttpRules.Matched> matched) implements AsyncListener {

        @Override
        public void onComplete(AsyncEvent event) {
            if (event.getSuppliedResponse() instanceof HttpServletResponse response) {
                settleCosts(this.admission, this.matched, response);
                if (response.getStatus() < 400) {
                    this.admission.succeeded();
                    return;
                }
            }
            this.admission.failed();
        }

        @Override
        public void onTimeout(AsyncEvent event) {
            costs(event);
            this.admission.failed();
        }

        @Override
        public void onError(AsyncEvent event) {
            costs(event);
            this.admission.failed();
        }

        private void costs(AsyncEvent event) {
            if (event.getSuppliedResponse() instanceof HttpServletResponse response) {
                settleCosts(this.admission, this.matched, response);
            }
        }

        @Override
        public void onStartAsync(AsyncEvent event) {}
    }
}
