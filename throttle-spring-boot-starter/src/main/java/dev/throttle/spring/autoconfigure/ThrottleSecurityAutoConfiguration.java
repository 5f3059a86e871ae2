package dev.throttle.spring.autoconfigure;

import dev.throttle.Throttler;
import dev.throttle.spring.internal.request.PolicyModes;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import dev.throttle.spring.internal.security.AuthenticationRefusalFilter;
import dev.throttle.spring.internal.security.AuthenticationThrottlePostProcessor;
import dev.throttle.spring.internal.web.ClientAccess;
import dev.throttle.spring.internal.web.ServletRefusals;
import dev.throttle.spring.internal.web.ServletThrottleRequestContext;
import dev.throttle.spring.security.AuthenticationThrottle;
import dev.throttle.spring.web.ThrottleExceptionHandler;
import jakarta.servlet.http.HttpServletRequest;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.ConfigurationCondition;
import org.springframework.core.env.Environment;
import org.springframework.security.authentication.ProviderManager;
import org.springframework.security.web.access.WebInvocationPrivilegeEvaluator;
import org.springframework.web.context.request.RequestContextHolder;

/**
 * Spring Security logins throttled by {@code throttle.security.authentication.username-policy}
 * and {@code ip-policy}: the {@link AuthenticationThrottle} (backs off for one of the
 * application's own), the post-processor that charges every {@code ProviderManager}'s attempts
 * before a password is checked (on when either property is set or the application declares its
 * own throttle), and the filter before Spring Security's that answers a refusal thrown inside its
 * chain with 429 (always, in a servlet application with Spring Security).
 */
@AutoConfiguration(after = {ThrottleAutoConfiguration.class, ThrottleWebMvcAutoConfiguration.class})
@ConditionalOnClass({ProviderManager.class, RequestContextHolder.class})
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnBooleanProperty(name = "throttle.enabled", matchIfMissing = true)
public final class ThrottleSecurityAutoConfiguration {

    /** Spring Boot's default order of Spring Security's filter chain ({@code spring.security.filter.order}). */
    private static final int SECURITY_FILTER_ORDER = -100;

    /** The throttle of every login attempt, on when either property is set or the application declares its own. */
    @Configuration(proxyBeanMethods = false)
    @Conditional(ThrottleSecurityAutoConfiguration.OnAuthenticationThrottle.class)
    static class AuthenticationThrottling {

        @Bean
        @ConditionalOnMissingBean
        AuthenticationThrottle authenticationThrottle(
                Throttler throttler,
                ThrottleProperties properties,
                ObjectProvider<ThrottleRequestContext> requestContext,
                ObjectProvider<ClientAccess> clientAccess,
                ObjectProvider<PolicyModes> modes) {
            boolean headers = properties.getHttp().getHeaders() == ThrottleProperties.Headers.IETF;
            return new AuthenticationThrottle(
                    throttler,
                    properties,
                    requestContext.getIfAvailable(() -> new ServletThrottleRequestContext(
                            headers, properties.getHttp().getIpv6Prefix())),
                    clientAccess.getIfAvailable(ClientAccess::none),
                    modes.getIfAvailable());
        }

        @Bean
        static AuthenticationThrottlePostProcessor authenticationThrottlePostProcessor(
                ObjectProvider<AuthenticationThrottle> throttle) {
            return new AuthenticationThrottlePostProcessor(throttle);
        }
    }

    /**
     * Just before Spring Security's filter chain, wherever {@code spring.security.filter.order} puts it:
     * answers a refusal thrown inside the chain, the login throttle's or that of a {@code @Throttled}
     * bean the chain calls (an {@code AuthenticationProvider} of the application's own), which would
     * otherwise reach the container as an error and the client as Spring Security's 401 for the error page.
     */
    @Bean
    AuthenticationRefusalFilter authenticationRefusalFilter(
            Environment environment,
            ThrottleProperties properties,
            ObjectProvider<ErrorPageAccess> errorPageAccess,
            ObjectProvider<ServletRefusals> refusals,
            ObjectProvider<ThrottleExceptionHandler> handler) {
        int securityOrder =
                environment.getProperty("spring.security.filter.order", Integer.class, SECURITY_FILTER_ORDER);
        ErrorPageAccess access = errorPageAccess.getIfAvailable();
        // without Spring MVC there is no writer bean: the application's handler, or the starter's, still decides
        ServletRefusals writer = refusals.getIfAvailable(() -> new ServletRefusals(
                handler.getIfAvailable(() -> new ThrottleExceptionHandler(
                        properties.getHttp().getHeaders() == ThrottleProperties.Headers.IETF)),
                null));
        return new AuthenticationRefusalFilter(
                securityOrder - 1, writer, (access != null) ? access::allowed : (request) -> true);
    }

    @Bean
    @ConditionalOnClass(WebInvocationPrivilegeEvaluator.class)
    ErrorPageAccess throttleErrorPageAccess(
            ObjectProvider<WebInvocationPrivilegeEvaluator> evaluator, Environment environment) {
        return new ErrorPageAccess(evaluator, environment.getProperty("server.error.path", "/error"));
    }

    /**
     * Whether Spring Security lets an anonymous client see the error page, by its privilege evaluator
     * (asked per refusal, which is rare; no evaluator: yes).
     */
    static final class ErrorPageAccess {

        private final ObjectProvider<WebInvocationPrivilegeEvaluator> evaluator;

        private final String path;

        ErrorPageAccess(ObjectProvider<WebInvocationPrivilegeEvaluator> evaluator, String path) {
            this.evaluator = evaluator;
            this.path = path;
        }

        boolean allowed(HttpServletRequest request) {
            WebInvocationPrivilegeEvaluator privileges = this.evaluator.getIfUnique();
            return privileges == null || privileges.isAllowed(request.getContextPath(), this.path, "GET", null);
        }
    }

    static final class OnAuthenticationThrottle extends AnyNestedCondition {

        OnAuthenticationThrottle() {
            super(ConfigurationCondition.ConfigurationPhase.REGISTER_BEAN);
        }

        @ConditionalOnProperty("throttle.security.authentication.username-policy")
        static final class UsernamePolicy {}

        @ConditionalOnProperty("throttle.security.authentication.ip-policy")
        static final class IpPolicy {}

        @ConditionalOnBean(AuthenticationThrottle.class)
        static final class OwnThrottle {}
    }
}
