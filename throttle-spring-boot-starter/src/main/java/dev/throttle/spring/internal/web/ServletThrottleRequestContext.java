package dev.throttle.spring.internal.web;

import dev.throttle.spring.admission.Admission;
import dev.throttle.spring.admission.PolicyDecision;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import dev.throttle.spring.web.RateLimitHeaders;
import dev.throttle.spring.web.Refusal;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.security.Principal;
import java.util.List;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import org.springframework.web.context.request.NativeWebRequest;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;
import org.springframework.web.context.request.async.CallableProcessingInterceptor;
import org.springframework.web.context.request.async.DeferredResult;
import org.springframework.web.context.request.async.DeferredResultProcessingInterceptor;
import org.springframework.web.context.request.async.WebAsyncManager;
import org.springframework.web.context.request.async.WebAsyncUtils;

/**
 * The servlet request a throttled call runs in. {@code #ip} is
 * {@link HttpServletRequest#getRemoteAddr()}, an IPv6 address grouped by its prefix (a /64 by
 * default): it honours X-Forwarded-For only when the application configured Spring Boot's
 * {@code server.forward-headers-strategy}, so a client cannot buy a fresh bucket by sending the
 * header itself (with {@code native}, Tomcat takes the right-most address that is not a trusted
 * proxy's).
 */
public final class ServletThrottleRequestContext extends WebRequestContext implements ThrottleRequestContext {

    /**
     * Creates a context without a safelist.
     * @param writeHeaders whether allowed calls get RateLimit headers
     * @param ipv6Prefix the leading bits of an IPv6 client address that {@code #ip} keeps (1 to 128)
     */
    public ServletThrottleRequestContext(boolean writeHeaders, int ipv6Prefix) {
        this(writeHeaders, ipv6Prefix, ClientAccess.none());
    }

    /**
     * Creates a context.
     * @param writeHeaders whether allowed calls get RateLimit headers
     * @param ipv6Prefix the leading bits of an IPv6 client address that {@code #ip} keeps (1 to 128)
     * @param access the safelisted client addresses, never throttled
     */
    public ServletThrottleRequestContext(boolean writeHeaders, int ipv6Prefix, ClientAccess access) {
        super(writeHeaders, ipv6Prefix, access);
    }

    @Override
    public boolean safelisted() {
        HttpServletRequest request = request();
        return request != null && this.access.isSafelisted(request.getRemoteAddr());
    }

    @Override
    public void refused(PolicyDecision refusal) {
        RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
        if (attributes instanceof ServletRequestAttributes servlet) {
            ServletRefusals.headers(
                    servlet.getResponse(), Refusal.of(refusal.policy(), refusal.decision(), this.writeHeaders));
        }
    }

    /**
     * Through the request's {@link WebAsyncManager}: whichever asynchronous processing the handler's
     * value starts (a DeferredResult, which emitters use, or a Callable, which a
     * StreamingResponseBody uses) ends the call when it completes, times out or fails; a request
     * that never starts one never calls either, so the caller ends the call then.
     */
    @Override
    public boolean releaseWhenRequestEnds(Admission admission) {
        HttpServletRequest request = request();
        if (request == null) {
            return false;
        }
        WebAsyncManager manager = WebAsyncUtils.getAsyncManager(request);
        String key = ServletThrottleRequestContext.class.getName() + "@" + System.identityHashCode(admission);
        manager.registerCallableInterceptor(key, new CallableProcessingInterceptor() {
            @Override
            public <T> void afterCompletion(NativeWebRequest webRequest, Callable<T> task) {
                admission.failed();
            }
        });
        manager.registerDeferredResultInterceptor(key, new DeferredResultProcessingInterceptor() {
            @Override
            public <T> void afterCompletion(NativeWebRequest webRequest, DeferredResult<T> result) {
                admission.failed();
            }
        });
        return true;
    }

    @Override
    public @Nullable Object getAttribute(String name) {
        HttpServletRequest request = request();
        return (request != null) ? request.getAttribute(name) : null;
    }

    @Override
    public void removeAttribute(String name) {
        HttpServletRequest request = request();
        if (request != null) {
            request.removeAttribute(name);
        }
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
        return new Bound(
                ClientAddresses.key(request.getRemoteAddr(), this.ipv6Prefix),
                (principal != null) ? principal.getName() : null,
                servlet.getResponse(),
                this.writeHeaders,
                this.access.isSafelisted(request.getRemoteAddr()));
    }

    private record Bound(
            String clientAddress,
            String principalName,
            HttpServletResponse response,
            boolean writeHeaders,
            boolean safelisted)
            implements ThrottleRequestContext {

        @Override
        public void allowed(List<PolicyDecision> decisions) {
            if (this.writeHeaders) {
                addHeaders(this.response, decisions);
            }
        }

        @Override
        public void refused(PolicyDecision refusal) {
            ServletRefusals.headers(this.response, Refusal.of(refusal.policy(), refusal.decision(), this.writeHeaders));
        }
    }

    static void addHeaders(HttpServletResponse response, List<PolicyDecision> decisions) {
        // no enforcing policy decided (all in shadow mode): no headers, rather than empty ones
        if (response == null || response.isCommitted() || decisions.isEmpty()) {
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
        response.setHeader(
                RateLimitHeaders.POLICY, RateLimitItems.merged(earlierPolicies, RateLimitHeaders.policy(decisions)));
        response.setHeader(RateLimitHeaders.LIMIT, RateLimitItems.merged(earlier, RateLimitHeaders.limit(decisions)));
    }

    @Override
    public int responseStatus() {
        RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
        HttpServletResponse response =
                (attributes instanceof ServletRequestAttributes servlet) ? servlet.getResponse() : null;
        return (response != null) ? response.getStatus() : 0;
    }

    private static HttpServletRequest request() {
        RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
        return (attributes instanceof ServletRequestAttributes servlet) ? servlet.getRequest() : null;
    }
}
