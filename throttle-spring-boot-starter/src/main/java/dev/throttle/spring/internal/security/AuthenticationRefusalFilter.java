package dev.throttle.spring.internal.security;

import dev.throttle.ThrottledException;
import dev.throttle.spring.internal.web.OrderedRequestFilter;
import dev.throttle.spring.internal.web.ServletRefusals;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;

/**
 * Answers a refused login attempt. The refusal leaves Spring Security's authentication filters as
 * a {@link ThrottledException}, which is no {@code AuthenticationException}: no failure handler
 * redirects it, no entry point turns it into a 401, and it reaches this filter, which sits just
 * before Spring Security's filter chain and answers it as every refusal is answered: 429 with
 * {@code Retry-After} and the RateLimit headers, problem+json or the 429 error page for a browser
 * (never an ERROR log: nothing escapes to the container).
 *
 * <p>A browser's error page is rendered by an error dispatch, which goes through Spring Security's
 * filter chain too: where the application's rules refuse the error page to the client (Spring
 * Boot's default security, which permits nothing to anonymous clients), the dispatch would turn
 * the 429 into a redirect to the login page. Such a client gets the problem+json body instead.
 *
 * <p>It also binds the request to the thread when nothing else did (an application without
 * Spring MVC's request context filter), so that an attempt can be keyed by {@code #ip}.
 */
public final class AuthenticationRefusalFilter extends OrderedRequestFilter {

    private final ServletRefusals refusals;

    private final Predicate<HttpServletRequest> errorPageAllowed;

    /**
     * Creates the filter.
     * @param order its order among servlet filters: before Spring Security's
     * @param refusals answers a refused attempt
     * @param errorPageAllowed whether the client of a request may see the application's error page
     */
    public AuthenticationRefusalFilter(
            int order, ServletRefusals refusals, Predicate<HttpServletRequest> errorPageAllowed) {
        super(order);
        this.refusals = refusals;
        this.errorPageAllowed = errorPageAllowed;
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        boolean bind = RequestContextHolder.getRequestAttributes() == null;
        if (bind) {
            RequestContextHolder.setRequestAttributes(new ServletRequestAttributes(request, response));
        }
        try {
            chain.doFilter(request, response);
        } catch (ServletException ex) {
            if (!refused(request, response, refusal(ex))) {
                throw ex;
            }
        } catch (RuntimeException ex) {
            if (!refused(request, response, refusal(ex))) {
                throw ex;
            }
        } finally {
            if (bind) {
                RequestContextHolder.resetRequestAttributes();
            }
        }
    }

    /** Answers a refusal; false when there is none to answer, or the response has gone already. */
    private boolean refused(
            HttpServletRequest request, HttpServletResponse response, @Nullable ThrottledException refusal)
            throws IOException {
        if (refusal == null || response.isCommitted()) {
            return false;
        }
        this.refusals.write(
                request,
                response,
                refusal,
                !ServletRefusals.prefersHtml(request) || this.errorPageAllowed.test(request));
        return true;
    }

    /** A refusal that a filter or a container wrapped on its way out. */
    private static @Nullable ThrottledException refusal(Throwable ex) {
        Throwable cause = ex;
        for (int depth = 0; cause != null && depth < 8; depth++) {
            if (cause instanceof ThrottledException refusal) {
                return refusal;
            }
            cause = cause.getCause();
        }
        return null;
    }
}
