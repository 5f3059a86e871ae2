package dev.throttle.spring.autoconfigure;

import java.util.List;
import java.util.Map;

import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

import dev.throttle.Throttler;
import dev.throttle.spring.internal.aop.ThrottledMethods.PolicyUsage;
import dev.throttle.spring.internal.web.HttpRules;

/**
 * Builds {@code throttle.http.rules} for the servlet and the reactive filter, checking at startup
 * that a rule keyed by {@code #principal} runs where someone can be signed in.
 */
final class HttpRulesFactory {

	/** Spring Security's servlet filter chain order by default ({@code spring.security.filter.order}). */
	private static final int SERVLET_SECURITY_ORDER = -100;

	/** The order of Spring Security's WebFilterChainProxy in WebFlux. */
	private static final int REACTIVE_SECURITY_ORDER = -100;

	private HttpRulesFactory() {
	}

	static HttpRules rules(ThrottleProperties properties, Throttler throttler, Environment environment,
			boolean reactive, ClassLoader classLoader) {
		ThrottleProperties.Http http = properties.getHttp();
		List<HttpRules.Spec> specs = http.getRules()
			.stream()
			.map((rule) -> new HttpRules.Spec(rule.getPaths(), rule.getMethods(), rule.getPolicy(), rule.getKey(),
					rule.getCost()))
			.toList();
		Map<String, ThrottleProperties.Policy> policies = properties.getPolicies();
		return new HttpRules(specs, throttler, (name) -> {
			ThrottleProperties.Policy policy = policies.get(name);
			return (policy != null) ? new PolicyUsage(policy.isResetOnSuccess(),
					policy.getCount() == ThrottleProperties.Count.FAILURES) : PolicyUsage.DEFAULT;
		}, principalProblem(http.getFilterOrder(), environment, reactive, classLoader));
	}

	private static String principalProblem(int filterOrder, Environment environment, boolean reactive,
			ClassLoader classLoader) {
		String chain = reactive ? "org.springframework.security.web.server.WebFilterChainProxy"
				: "org.springframework.security.web.FilterChainProxy";
		if (!ClassUtils.isPresent(chain, classLoader)) {
			return "Spring Security is not on the classpath to supply one, so every request would share one bucket";
		}
		int securityOrder = reactive ? REACTIVE_SECURITY_ORDER
				: environment.getProperty("spring.security.filter.order", Integer.class, SERVLET_SECURITY_ORDER);
		if (filterOrder <= securityOrder) {
			return "the rules' filter runs before Spring Security's (throttle.http.filter-order=" + filterOrder
					+ ", Spring Security's " + securityOrder + "), where nobody is signed in yet, so every request "
					+ "would share one bucket: set throttle.http.filter-order above " + securityOrder + " (such as 0)";
		}
		return null;
	}

}
