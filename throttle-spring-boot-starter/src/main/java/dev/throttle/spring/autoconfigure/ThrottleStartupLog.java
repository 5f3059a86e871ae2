package dev.throttle.spring.autoconfigure;

import dev.throttle.Policy;
import dev.throttle.Throttler;
import dev.throttle.spring.client.ThrottledClients;
import dev.throttle.spring.internal.web.HttpRules;
import dev.throttle.spring.security.AuthenticationThrottle;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.stream.Collectors;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.util.ClassUtils;

/**
 * The one INFO line throttling logs at startup, so that an operator reading the log sees what is
 * in force: the store, every entry point that is on (annotated methods, URL rules, Spring Security
 * logins, outgoing clients, the {@code Throttler} bean) and each policy by name and algorithm. A newcomer whose
 * application throttles only by URL rules or Spring Security logins reads that here, not "0
 * methods". Never a key, nor a key expression: those may name personal data.
 */
final class ThrottleStartupLog {

    private static final Log logger = LogFactory.getLog(ThrottleStartupLog.class);

    /** Whether URL rules can exist: they match with Spring Web's path patterns, an optional dependency. */
    private static final boolean WEB = ClassUtils.isPresent(
            "org.springframework.web.util.pattern.PathPattern", ThrottleStartupLog.class.getClassLoader());

    /** Whether Spring Security logins can be throttled: Spring Security is an optional dependency. */
    private static final boolean SECURITY = ClassUtils.isPresent(
            "org.springframework.security.core.Authentication", ThrottleStartupLog.class.getClassLoader());

    /** Whether outgoing clients can exist: they attach to Spring Web's HTTP clients, an optional dependency. */
    private static final boolean CLIENTS = ClassUtils.isPresent(
            "org.springframework.http.client.ClientHttpRequestInterceptor", ThrottleStartupLog.class.getClassLoader());

    private ThrottleStartupLog() {}

    /**
     * Logs what is throttled, for example {@code Throttling with the memory store: 2 annotated
     * methods, 1 URL rule, Spring Security logins (username-policy login, ip-policy login-ip), the
     * Throttler bean; policies: login (lockout), login-ip (token-bucket), api (gcra)}.
     * @param beanFactory the context, asked which entry points are on
     * @param throttler the throttler in force
     * @param throttledMethods how many methods of beans are throttled
     */
    static void enabled(ListableBeanFactory beanFactory, Throttler throttler, int throttledMethods) {
        if (logger.isInfoEnabled()) {
            ThrottleProperties properties =
                    beanFactory.getBeanProvider(ThrottleProperties.class).getIfAvailable();
            List<String> entryPoints = new ArrayList<>(4);
            if (throttledMethods > 0) {
                entryPoints.add(count(throttledMethods, "annotated method"));
            }
            if (WEB && Web.rulesApply(beanFactory) && properties != null) {
                entryPoints.add(count(properties.getHttp().getRules().size(), "URL rule"));
            }
            if (SECURITY && Security.loginsThrottled(beanFactory)) {
                String policies = securityPolicies(properties);
                if (!policies.isEmpty() || properties == null) {
                    entryPoints.add("Spring Security logins" + policies);
                } else {
                    // set but empty (an unresolved ${LOGIN_POLICY:}): no policy, so no login is throttled
                    logger.warn("throttle.security.authentication.username-policy and ip-policy are set but empty: "
                            + "no Spring Security login is throttled");
                }
            }
            if (CLIENTS) {
                String clients = Clients.describe(beanFactory);
                if (clients != null) {
                    entryPoints.add(clients);
                }
            }
            entryPoints.add("the Throttler bean");
            logger.info("Throttling with the " + throttler.store().kind() + " store: " + String.join(", ", entryPoints)
                    + "; policies: " + describe(throttler.policies().values()));
        }
    }

    /**
     * Logs that nothing is throttled although the policies were checked.
     * @param policies the policies configured
     */
    static void disabled(Collection<Policy> policies) {
        if (logger.isInfoEnabled()) {
            logger.info("Throttling is disabled (throttle.enabled=false): nothing is throttled; policies checked: "
                    + describe(policies));
        }
    }

    private static String count(int count, String what) {
        return count + " " + what + ((count == 1) ? "" : "s");
    }

    private static String securityPolicies(@Nullable ThrottleProperties properties) {
        if (properties == null) {
            return "";
        }
        ThrottleProperties.Authentication authentication =
                properties.getSecurity().getAuthentication();
        List<String> named = new ArrayList<>(2);
        if (authentication.getUsernamePolicy() != null
                && !authentication.getUsernamePolicy().isBlank()) {
            named.add("username-policy " + authentication.getUsernamePolicy());
        }
        if (authentication.getIpPolicy() != null
                && !authentication.getIpPolicy().isBlank()) {
            named.add("ip-policy " + authentication.getIpPolicy());
        }
        return named.isEmpty() ? "" : " (" + String.join(", ", named) + ")";
    }

    /** Loaded only where Spring Web's HTTP clients are present. */
    private static final class Clients {

        static @Nullable String describe(ListableBeanFactory beanFactory) {
            ThrottledClients clients =
                    beanFactory.getBeanProvider(ThrottledClients.class).getIfAvailable();
            if (clients == null || clients.isEmpty()) {
                return null;
            }
            return count(clients.names().size(), "outgoing client") + " (" + String.join(", ", clients.names()) + ")";
        }
    }

    /** Loaded only where Spring Web is present. */
    private static final class Web {

        static boolean rulesApply(ListableBeanFactory beanFactory) {
            HttpRules rules = beanFactory.getBeanProvider(HttpRules.class).getIfAvailable();
            return rules != null && !rules.isEmpty();
        }
    }

    /** Loaded only where Spring Security is present. */
    private static final class Security {

        static boolean loginsThrottled(ListableBeanFactory beanFactory) {
            return beanFactory.getBeanProvider(AuthenticationThrottle.class).getIfAvailable() != null;
        }
    }

    private static String describe(Collection<? extends Policy> policies) {
        if (policies.isEmpty()) {
            return "none";
        }
        return policies.stream()
                .map((policy) -> policy.name() + " (" + policy.algorithm().id() + ")")
                .collect(Collectors.joining(", "));
    }
}
