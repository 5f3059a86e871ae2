package dev.throttle.spring.autoconfigure;

import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.internal.aop.EarlyThrottlingInterceptor;
import dev.throttle.spring.internal.aop.ThrottledMethods;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import dev.throttle.spring.internal.web.BanGate;
import dev.throttle.spring.internal.web.ClientAccess;
import dev.throttle.spring.internal.web.CorsExposure;
import dev.throttle.spring.internal.web.HttpRules;
import dev.throttle.spring.internal.web.ServletBanFilter;
import dev.throttle.spring.internal.web.ServletHttpRulesFilter;
import dev.throttle.spring.internal.web.ServletRefusals;
import dev.throttle.spring.internal.web.ServletThrottleRequestContext;
import dev.throttle.spring.web.ThrottleExceptionHandler;
import java.util.Map;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;
import org.springframework.core.io.ResourceLoader;
import org.springframework.web.cors.CorsConfigurationSource;
import org.springframework.web.cors.CorsProcessor;
import org.springframework.web.cors.UrlBasedCorsConfigurationSource;
import org.springframework.web.servlet.DispatcherServlet;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;
import org.springframework.web.servlet.handler.AbstractHandlerMapping;

/**
 * Spring MVC support: {@code #ip} and {@code #principal} from the servlet request, RateLimit
 * headers on allowed responses, and 429 problem responses for refusals.
 */
@AutoConfiguration(after = ThrottleAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass(DispatcherServlet.class)
@ConditionalOnBooleanProperty(name = "throttle.enabled", matchIfMissing = true)
public final class ThrottleWebMvcAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean(ThrottleRequestContext.class)
    ServletThrottleRequestContext throttleRequestContext(ThrottleProperties properties, ClientAccess clientAccess) {
        return new ServletThrottleRequestContext(
                properties.getHttp().getHeaders() == ThrottleProperties.Headers.IETF,
                properties.getHttp().getIpv6Prefix(),
                clientAccess);
    }

    // --- URL rules, safelist and blocklist, early decisions, CORS ---

    @Bean
    @ConditionalOnMissingBean
    HttpRules throttleHttpRules(
            ThrottleProperties properties,
            Admissions admissions,
            Environment environment,
            ResourceLoader resourceLoader) {
        return HttpRulesFactory.rules(properties, admissions, environment, false, resourceLoader.getClassLoader());
    }

    /**
     * The filter of URL rules and of the blocklist, before Spring Security's; only when there is a
     * rule or a blocked address.
     */
    @Bean
    @Conditional(OnRulesOrBlocklist.class)
    @ConditionalOnMissingBean(name = "throttleHttpRulesFilter")
    FilterRegistrationBean<ServletHttpRulesFilter> throttleHttpRulesFilter(
            HttpRules rules,
            ClientAccess access,
            ThrottleProperties properties,
            ObjectProvider<CorsConfigurationSource> corsSources,
            ServletRefusals refusals) {
        ThrottleProperties.Http http = properties.getHttp();
        ServletHttpRulesFilter filter = new ServletHttpRulesFilter(
                HttpRulesFactory.filterConfig(rules, access, properties, corsSources), refusals);
        FilterRegistrationBean<ServletHttpRulesFilter> registration = new FilterRegistrationBean<>(filter);
        registration.setOrder(http.getFilterOrder());
        return registration;
    }

    /**
     * Decides handlers whose keys read only the request before their arguments are bound.
     */
    @Bean
    WebMvcConfigurer throttleEarlyDecisions(
            ObjectProvider<ThrottledMethods> methods, ObjectProvider<ThrottleRequestContext> requestContext) {
        return new WebMvcConfigurer() {

            @Override
            public void addInterceptors(InterceptorRegistry registry) {
                ThrottledMethods throttled = methods.getIfAvailable();
                ThrottleRequestContext context = requestContext.getIfAvailable();
                if (throttled != null && context != null) {
                    registry.addInterceptor(new EarlyThrottlingInterceptor(throttled, context))
                            .order(Ordered.HIGHEST_PRECEDENCE);
                }
            }
        };
    }

    /**
     * Lets cross-origin scripts read Retry-After and the rate-limit headers wherever the
     * application's CORS configuration (WebMvcConfigurer, @CrossOrigin, a UrlBasedCorsConfigurationSource
     * bean) allows the origin.
     */
    @Bean
    static BeanPostProcessor throttleCorsExposure() {
        return new BeanPostProcessor() {

            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                if (bean instanceof AbstractHandlerMapping mapping) {
                    CorsProcessor processor = mapping.getCorsProcessor();
                    mapping.setCorsProcessor((config, request, response) ->
                            processor.processRequest(CorsExposure.exposing(config), request, response));
                } else if (bean instanceof UrlBasedCorsConfigurationSource source) {
                    source.getCorsConfigurations().values().forEach(CorsExposure::expose);
                }
                return bean;
            }
        };
    }

    // --- end of URL rules ---

    /**
     * Spring MVC finds the request on the calling thread, which a Kotlin {@code suspend fun} that
     * handles no request may not run on: the rule is declared as the annotated methods are created,
     * so that the startup check, which resolves every one of them, reports each that breaks it.
     */
    @Bean
    static BeanPostProcessor throttleRequestOnCallingThread() {
        return new BeanPostProcessor() {

            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                if (bean instanceof ThrottledMethods methods) {
                    methods.requireRequestOnCallingThread();
                }
                return bean;
            }
        };
    }

    /** The same rule once every singleton exists, for annotated methods created before its post-processor. */
    @Bean
    static SmartInitializingSingleton throttleRequestOnCallingThreadRule(
            ObjectProvider<ThrottledMethods> throttledMethods) {
        return () -> throttledMethods.ifAvailable(ThrottledMethods::requireRequestOnCallingThread);
    }

    @Bean
    @ConditionalOnMissingBean(ThrottleExceptionHandler.class)
    ThrottleExceptionHandler throttleExceptionHandler(ThrottleProperties properties) {
        return new ThrottleExceptionHandler(properties.getHttp().getHeaders() == ThrottleProperties.Headers.IETF);
    }

    /**
     * Writes every refusal, the application's {@link ThrottleExceptionHandler} deciding its answer:
     * Spring MVC's exception handling, the URL rules, the Spring Security hook.
     */
    @Bean
    @ConditionalOnMissingBean
    ServletRefusals throttleRefusals(
            ThrottleExceptionHandler handler, BeanFactory beanFactory, ObjectProvider<BanGate> bans) {
        ServletRefusals refusals = new ServletRefusals(handler, beanFactory);
        refusals.setBans(bans.getIfAvailable());
        return refusals;
    }

    /**
     * The filter of bans, before the URL rules' (and so before Spring Security's); only when a ban is
     * configured (a ban added at run time names a configured one).
     */
    @Bean
    @Conditional(OnBansConfigured.class)
    @ConditionalOnMissingBean(name = "throttleBanFilter")
    FilterRegistrationBean<ServletBanFilter> throttleBanFilter(
            BanGate bans, ThrottleProperties properties, ServletRefusals refusals) {
        int order = properties.getHttp().getFilterOrder() - 1;
        FilterRegistrationBean<ServletBanFilter> registration =
                new FilterRegistrationBean<>(new ServletBanFilter(bans, refusals, order));
        registration.setOrder(order);
        return registration;
    }

    /** Whether some {@code throttle.http.rules[i]} or {@code throttle.http.blocklist} entry is configured. */
    static final class OnRulesOrBlocklist extends OnEntriesConfigured {

        OnRulesOrBlocklist() {
            super(Map.of(
                    "throttle.http.rules",
                    Bindable.listOf(ThrottleProperties.Http.Rule.class),
                    "throttle.http.blocklist",
                    Bindable.listOf(String.class)));
        }
    }

    /** Whether some {@code throttle.bans.<name>} is configured. */
    static final class OnBansConfigured extends OnEntriesConfigured {

        OnBansConfigured() {
            super("throttle.bans");
        }
    }
}
