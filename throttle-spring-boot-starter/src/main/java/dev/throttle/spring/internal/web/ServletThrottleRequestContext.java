package dev.throttle.spring.internal.web;

import java.security.Principal;
import java.util.List;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;

import dev.throttle.spring.internal.aop.PolicyDecision;
import dev.throttle.spring.internal.aop.ThrottleRequestContext;

/**
 * The servlet request a throttled call runs in. {@code #ip} is
 * {@link HttpServletRequest#getRemoteAddr()}, an IPv6 address grouped by its prefix (a /64 by
 * default): it honours X-Forwarded-For only when the application configured Spring Boot's
 * {@code server.forward-headers-strategy}, so a client cannot buy a fresh bucket by sending the
 * header itself (with {@code native}, Tomcat takes the right-most address that is not a trusted
 * proxy's).
 */
public final class ServletThrottleRequestContext implements ThrottleRequestContext {

	private final boolean writeHeaders;

	private final int ipv6Prefix;

	/**
	 * Creates a context that groups IPv6 clients by their /64.
	 * @param writeHeaders whether allowed calls get RateLimit headers
	 */
	public ServletThrottleRequestContext(boolean writeHeaders) {
		this(writeHeaders, 64);
	}

	/**
	 * Creates a context.
	 * @param writeHeaders whether allowed calls get RateLimit headers
	 * @param ipv6Prefix the leading bits of an IPv6 client address that {@code #ip} keeps (1 to 128)
	 */
	public ServletThrottleRequestContext(boolean writeHeaders, int ipv6Prefix) {
		this.writeHeaders = writeHeaders;
		this.ipv6Prefix = ipv6Prefix;
	}

	@Override
	public String clientAddress() {
		HttpServletRequest request = request();
		return (request != null) ? ClientAddresses.key(request.getRemoteAddr(), this.ipv6Prefix) : null;
	}

	@Override
	public String principalName() {
		HttpServletRequest request = request();
		Principal principal = (request != null) ? request.getUserPrincipal() : null;
		return (principal != null) ? principal.getName() : null;
	}

	@Override
	public void allowed(List<PolicyDecision> decisions) {
		if (!this.writeHeaders) {
			return;
		}
		RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
		if (attributes instanceof ServletRequestAttributes servlet) {
			addHeaders(servlet.getResponse(), decisions);
		}
	}

	/**
	 * Reads the address and the principal now, and keeps the response for the headers: the
	 * request object itself may be recycled by the container once an asynchronous request ends.
	 */
	@Override
	public ThrottleRequestContext snapshot() {
		RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
		if (!(attributes instanceof ServletRequestAttributes servlet)) {
			return NONE;
		}
		HttpServletRequest request = servlet.getRequest();
		Principal principal = request.getUserPrincipal();
		return new Bound(ClientAddresses.key(request.getRemoteAddr(), this.ipv6Prefix), (principal != null) ? principal.getName() : null,
				this.writeHeaders ? servlet.getResponse() : null);
	}

	private record Bound(String clientAddress, String principalName, HttpServletResponse response)
			implements ThrottleRequestContext {

		@Override
		public void allowed(List<PolicyDecision> decisions) {
			addHeaders(this.response, decisions);
		}

	}

	private static void addHeaders(HttpServletResponse response, List<PolicyDecision> decisions) {
		if (response == null || response.isCommitted()) {
			return;
		}
		String earlier = response.getHeader(RateLimitHeaders.LIMIT);
		if (earlier == null) {
			response.addHeader(RateLimitHeaders.POLICY, RateLimitHeaders.policy(decisions));
			response.addHeader(RateLimitHeaders.LIMIT, RateLimitHeaders.limit(decisions));
			return;
		}
		// a second throttled call in one request (a service its handler calls): one line, one item
		// per policy, the later decision replacing the earlier
		String earlierPolicies = response.getHeader(RateLimitHeaders.POLICY);
		response.setHeader(RateLimitHeaders.POLICY, RateLimitItems.merged(earlierPolicies, RateLimitHeaders.policy(decisions)));
		response.setHeader(RateLimitHeaders.LIMIT, RateLimitItems.merged(earlier, RateLimitHeaders.limit(decisions)));
	}

	private static HttpServletRequest request() {
		RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
		return (attributes instanceof ServletRequestAttributes servlet) ? servlet.getRequest() : null;
	}

}
