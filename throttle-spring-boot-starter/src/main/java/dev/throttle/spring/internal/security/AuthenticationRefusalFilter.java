package dev.throttle.spring.internal.security;

import java.io.IOException;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import org.jspecify.annotations.Nullable;
import org.springframework.core.Ordered;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;
import org.springframework.web.filter.OncePerRequestFilter;

import dev.throttle.ThrottledException;
import dev.throttle.spring.internal.web.ServletRefusals;

/**
 * Answers a refused login attempt. The refusal leaves Spring Security's authentication filters as
 * a {@link ThrottledException}, which is no {@code AuthenticationException}: no failure handler
 * redirects it, no entry point turns it into a 401, and it reaches this filter, which sits just
 * before Spring Security's filter chain and answers it as every refusal is answered: 429 with
 * {@code Retry-After} and the RateLimit headers, problem+json or the 429 error page for a browser
 * (never an ERROR log: nothing escapes to the container).
 *
 * <p>It also binds the request to the thread when nothing else did (an application without
 * Spring MVC's request context filter), so that an attempt can be keyed by {@code #ip}.
 */
public final class AuthenticationRefusalFilter extends OncePerRequestFilter implements Ordered {

	private final int order;

	private final boolean rateLimitHeaders;

	/**
	 * Creates the filter.
	 * @param order its order among servlet filters: before Spring Security's
	 * @param rateLimitHeaders whether refusals carry RateLimit-Policy and RateLimit
	 */
	public AuthenticationRefusalFilter(int order, boolean rateLimitHeaders) {
		this.order = order;
		this.rateLimitHeaders = rateLimitHeaders;
	}

	@Override
	public int getOrder() {
		return this.order;
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
		}
		catch (ServletException ex) {
			if (!refused(request, response, refusal(ex))) {
				throw ex;
			}
		}
		catch (RuntimeException ex) {
			if (!refused(request, response, refusal(ex))) {
				throw ex;
			}
		}
		finally {
			if (bind) {
				RequestContextHolder.resetRequestAttributes();
			}
		}
	}

	/** Answers a refusal; false when there is none to answer, or the response has gone already. */
	private boolean refused(HttpServletRequest request, HttpServletResponse response,
			@Nullable ThrottledException refusal) throws IOException {
		if (refusal == null || response.isCommitted()) {
			return false;
		}
		ServletRefusals.write(request, response, refusal, this.rateLimitHeaders);
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
