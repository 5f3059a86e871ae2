package dev.throttle.spring.autoconfigure;

import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.internal.web.ClientAccess;
import dev.throttle.spring.internal.web.HttpRules;
import dev.throttle.spring.internal.web.HttpRulesFilterConfig;
import java.util.ArrayList;
import java.util.List;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;
import org.springframework.util.function.SingletonSupplier;

/**
 * Builds {@code throttle.http.rules} and the configuration of the servlet and the reactive filter, checking at startup
 * that a rule keyed by {@code #principal} runs where someone can be signed in.
 */
final class HttpRulesFactory {

    private static final Log logger = LogFactory.getLog(HttpRulesFactory.class);

    /** Spring Security's servlet filter chain order by default ({@code spring.security.filter.order}). */
    private static final int SERVLET_SECURITY_ORDER = -100;

    /** The order of Spring Security's WebFilterChainProxy in WebFlux. */
    private static final int REACTIVE_SECURITY_ORDER = -100;

    private HttpRulesFactory() {}

    static HttpRules rules(
            ThrottleProperties properties,
            Admissions admissions,
            Environment environment,
            boolean reactive,
            ClassLoader classLoader) {
        ThrottleProperties.Http http = properties.getHttp();
        List<HttpRules.Spec> specs = http.getRules().stream()
                .map((rule) -> new HttpRules.Spec(
                        rule.getPaths(),
                        rule.getMethods(),
                        rule.getPolicy(),
                        rule.getKey(),
                        rule.getCost(),
                        rule.getPlan(),
                        rule.getActualCostHeader()))
                .toList();
        // a rule naming a policy with mistakes is left out, not said to name a policy that is not
        // configured: the policy's own mistakes are reported, by the startup check or, when a rule
        // fails the start first, with the rules' mistakes
        PolicyFactory.Policies policies = PolicyFactory.read(properties.getPolicies());
        warnOfContextPath(http.getRules(), environment, reactive);
        try {
            return new HttpRules(
                    specs,
                    admissions,
                    principalProblem(http.getFilterOrder(), environment, reactive, classLoader),
                    policies.invalid());
        } catch (ThrottleConfigurationException ex) {
            if (policies.problems().isEmpty()) {
                throw ex;
            }
            List<String> problems = new ArrayList<>(policies.problems());
            problems.addAll(ex.problems());
            throw new ThrottleConfigurationException(problems);
        }
    }

    /**
     * The configuration of the filter of URL rules and of the blocklist, for either web stack.
     * @param <C> the stack's CORS configuration source
     * @param rules the rules
     * @param access the safelist and blocklist
     * @param properties the starter's properties
     * @param corsSources the application's CORS configuration, looked up on first use
     * @return the filter's configuration
     */
    static <C> HttpRulesFilterConfig<C> filterConfig(
            HttpRules rules, ClientAccess access, ThrottleProperties properties, ObjectProvider<C> corsSources) {
        ThrottleProperties.Http http = properties.getHttp();
        return new HttpRulesFilterConfig<>(
                rules,
                access,
                http.getHeaders() == ThrottleProperties.Headers.IETF,
                http.getIpv6Prefix(),
                SingletonSupplier.of(() -> corsSources.orderedStream().toList()),
                http.getFilterOrder());
    }

    /**
     * Says at WARN which rules name a path under the application's context path (or WebFlux base
     * path): a rule matches the path after it, so such a rule matches only a path that repeats it.
     * Not a startup failure: an application may map such paths itself.
     */
    private static void warnOfContextPath(
            List<ThrottleProperties.Http.Rule> rules, Environment environment, boolean reactive) {
        String property = reactive ? "spring.webflux.base-path" : "server.servlet.context-path";
        String prefix = environment.getProperty(property, "").trim();
        while (prefix.endsWith("/")) {
            prefix = prefix.substring(0, prefix.length() - 1);
        }
        if (prefix.isEmpty()) {
            return;
        }
        for (int i = 0; i < rules.size(); i++) {
            List<String> paths = rules.get(i).getPaths();
            for (int j = 0; (paths != null) && j < paths.size(); j++) {
                String path = (paths.get(j) != null) ? paths.get(j).trim() : "";
                if (path.regionMatches(true, 0, prefix, 0, prefix.length())
                        && (path.length() == prefix.length() || path.charAt(prefix.length()) == '/')) {
                    logger.warn("throttle.http.rules[" + i + "].paths[" + j + "] '" + path + "' starts with "
                            + property + " '" + prefix + "', but a rule matches the path after it ('"
                            + (path.length() == prefix.length() ? "/" : path.substring(prefix.length()))
                            + "'), so this rule limits only paths that repeat it");
                }
            }
        }
    }

    private static String principalProblem(
            int filterOrder, Environment environment, boolean reactive, ClassLoader classLoader) {
        String chain = reactive
                ? "org.springframework.security.web.server.WebFilterChainProxy"
                : "org.springframework.security.web.FilterChainProxy";
        if (!ClassUtils.isPresent(chain, classLoader)) {
            return "Spring Security is not on the classpath to supply one, so every request would share one bucket";
        }
        int securityOrder = reactive
                ? REACTIVE_SECURITY_ORDER
                : environment.getProperty("spring.security.filter.order", Integer.class, SERVLET_SECURITY_ORDER);
        if (filterOrder <= securityOrder) {
            return "the rules' filter runs before Spring Security's (throttle.http.filter-order=" + filterOrder
                    + ", Spring Security's " + securityOrder + "), where nobody is signed in yet, so every request "
                    + "would share one bucket: set throttle.http.filter-order above " + securityOrder + " (such as 0)";
        }
        return null;
    }
}
