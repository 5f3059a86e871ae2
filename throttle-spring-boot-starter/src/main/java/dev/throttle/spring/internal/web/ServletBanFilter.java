package dev.throttle.spring.internal.web;

import dev.throttle.spring.bans.ActiveBan;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;

/**
 * The servlet filter of bans, ordered before the URL rules and Spring Security: a request whose key
 * is banned is refused before anything else runs, throttled or not, from the bans this instance
 * holds in memory (no store round trip). Without an active ban it costs one map check.
 */
public final class ServletBanFilter extends OrderedRequestFilter {

    private final BanGate gate;

    private final ServletRefusals refusals;

    /**
     * Creates the filter.
     * @param gate the bans
     * @param refusals answers a banned request
     * @param order the filter's order
     */
    public ServletBanFilter(BanGate gate, ServletRefusals refusals, int order) {
        super(order);
        this.gate = gate;
        this.refusals = refusals;
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        if (this.gate.bans().anyActive()) {
            ActiveBan ban = this.gate.check(
                    new ServletHttpRulesFilter.Request(request, this.gate.ipv6Prefix()),
                    this.gate.access().isSafelisted(request.getRemoteAddr()));
            if (ban != null) {
                this.refusals.writeBan(request, response, this.gate, ban);
                return;
            }
        }
        chain.doFilter(request, response);
    }
}
