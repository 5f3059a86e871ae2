package dev.throttle.spring.autoconfigure;

import dev.throttle.ThrottleStore;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.internal.aop.EarlyThrottlingHandlerAdapter;
import dev.throttle.spring.internal.aop.ThrottledMethods;
import dev.throttle.spring.internal.request.ReactiveThrottleRequestContext;
import dev.throttle.spring.internal.web.BanGate;
import dev.throttle.spring.internal.web.ClientAccess;
import dev.throttle.spring.internal.web.CorsExposure;
import dev.throttle.spring.internal.web.HttpRules;
import dev.throttle.spring.internal.web.WebFluxBanFilter;
import dev.throttle.spring.internal.web.WebFluxExchangeEnds;
import dev.throttle.spring.internal.web.WebFluxHttpRulesFilter;
import dev.throttle.spring.internal.web.WebFluxRefusalExceptionHandler;
import dev.throttle.spring.internal.web.WebFluxRefusals;
import dev.throttle.spring.internal.web.WebFluxThrottleRequestContext;
import dev.throttle.spring.web.ThrottleExceptionHandler;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.InitializingBean;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.core.env.Environment;
import org.springframework.core.io.ResourceLoader;
import org.springframework.web.cors.reactive.CorsConfigurationSource;
import org.springframework.web.cors.reactive.CorsProcessor;
import org.springframework.web.filter.reactive.ServerWebExchangeContextFilter;
import org.springframework.web.reactive.DispatcherHandler;
import org.springframework.web.reactive.handler.AbstractHandlerMapping;
import org.springframework.web.reactive.result.method.annotation.RequestMappingHandlerAdapter;

/**
 * WebFlux support: reactive throttled methods find {@code #ip}, {@code #principal} and the
 * response through the exchange in the subscriber's context; refusals become the same 429 problem
 * responses as in Spring MVC.
 */
@AutoConfiguration(after = ThrottleAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
@ConditionalOnClass(DispatcherHandler.class)
@ConditionalOnBooleanProperty(name = "throttle.enabled", matchIfMissing = true)
public final class ThrottleWebFluxAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    @Order(Ordered.HIGHEST_PRECEDENCE)
    ServerWebExchangeContextFilter serverWebExchangeContextFilter() {
        return new ServerWebExchangeContextFilter();
    }

    /** Ends what a throttled call left for the end of its exchange (a body never read). */
    @Bean
    @ConditionalOnMissingBean
    WebFluxExchangeEnds throttleExchangeEnds() {
        return new WebFluxExchangeEnds();
    }

    @Bean
    @ConditionalOnMissingBean(ReactiveThrottleRequestContext.class)
    WebFluxThrottleRequestContext reactiveThrottleRequestContext(
            ThrottleProperties properties, ClientAccess clientAccess) {
        return new WebFluxThrottleRequestContext(
                properties.getHttp().getHeaders() == ThrottleProperties.Headers.IETF,
                properties.getHttp().getIpv6Prefix(),
                clientAccess);
    }

    @Bean
    @ConditionalOnMissingBean(ThrottleExceptionHandler.class)
    ThrottleExceptionHandler throttleExceptionHandler(ThrottleProperties properties) {
        return new ThrottleExceptionHandler(properties.getHttp().getHeaders() == ThrottleProperties.Headers.IETF);
    }

    /**
     * Writes every refusal, the application's {@link ThrottleExceptionHandler} deciding its answer:
     * WebFlux's exception handling and the URL rules.
     */
    @Bean
    @ConditionalOnMissingBean
    WebFluxRefusals throttleRefusals(
            ThrottleExceptionHandler handler, BeanFactory beanFactory, ObjectProvider<BanGate> bans) {
        WebFluxRefusals refusals = new WebFluxRefusals(handler, beanFactory);
        refusals.setBans(bans.getIfAvailable());
        return refusals;
    }

    /**
     * Answers a refusal thrown outside any handler (from a web filter, Spring Security's among them)
     * as a handler's is answered, not with Spring Boot's 500.
     */
    @Bean
    @ConditionalOnMissingBean
    WebFluxRefusalExceptionHandler throttleRefusalExceptionHandler(WebFluxRefusals refusals) {
        return new WebFluxRefusalExceptionHandler(refusals);
    }

    /**
     * Spring Security login throttling ({@code throttle.security.authentication}) hooks into the
     * servlet stack's {@code ProviderManager}: in a WebFlux application it would throttle no login
     * while the application believes its logins are protected, so it stops the start instead.
     */
    @Bean
    static InitializingBean throttleNoServletLoginThrottling(Environment environment) {
        return () -> {
            for (String name : new String[] {"username-policy", "ip-policy"}) {
                String property = "throttle.security.authentication." + name;
                if (environment.getProperty(property) != null) {
                    throw new ThrottleConfigurationException(property + " throttles Spring Security logins in"
                            + " servlet applications only: this WebFlux application would throttle no login with"
                            + " it. Remove it, and put @Throttled on the authenticate method of a"
                            + " ReactiveAuthenticationManager bean of your own (see docs/security-logins.md)");
                }
            }
        };
    }

    /**
     * The web filter of bans, before the URL rules' (and so before Spring Security's); without an
     * active ban (always, without {@code throttle.bans}) it costs a request one map check.
     */
    @Bean
    @ConditionalOnMissingBean
    WebFluxBanFilter throttleBanWebFilter(BanGate bans, ThrottleProperties properties, WebFluxRefusals refusals) {
        return new WebFluxBanFilter(bans, refusals, properties.getHttp().getFilterOrder() - 1);
    }

    /**
     * Decides handlers whose keys read only the request before their arguments are resolved.
     */
    @Bean
    @ConditionalOnMissingBean
    EarlyThrottlingHandlerAdapter throttleEarlyDecisions(
            ObjectProvider<ThrottledMethods> methods,
            ReactiveThrottleRequestContext requestContext,
            ObjectProvider<RequestMappingHandlerAdapter> adapters) {
        return new EarlyThrottlingHandlerAdapter(methods, requestContext, adapters);
    }

    // --- URL rules, safelist and blocklist, CORS ---

    @Bean
    @ConditionalOnMissingBean
    HttpRules throttleHttpRules(
            ThrottleProperties properties,
            Admissions admissions,
            Environment environment,
            ResourceLoader resourceLoader) {
        return HttpRulesFactory.rules(properties, admissions, environment, true, resourceLoader.getClassLoader());
    }

    /**
     * The web filter of URL rules and of the blocklist, before Spring Security's.
     */
    @Bean
    @ConditionalOnMissingBean
    WebFluxHttpRulesFilter throttleHttpRulesWebFilter(
            HttpRules rules,
            ClientAccess access,
            ThrottleProperties properties,
            ObjectProvider<CorsConfigurationSource> corsSources,
            WebFluxRefusals refusals) {
        return new WebFluxHttpRulesFilter(
                HttpRulesFactory.filterConfig(rules, access, properties, corsSources), refusals);
    }

    /**
     * Lets cross-origin scripts read Retry-After and the rate-limit headers wherever the
     * application's CORS configuration of its handlers (WebFluxConfigurer, @CrossOrigin) allows the origin.
     */
    @Bean
    static BeanPostProcessor throttleCorsExposure() {
        return new BeanPostProcessor() {

            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                if (bean instanceof AbstractHandlerMapping mapping) {
                    CorsProcessor processor = mapping.getCorsProcessor();
                    mapping.setCorsProcessor(
                            (config, exchange) -> processor.process(CorsExposure.exposing(config), exchange));
                }
                return bean;
            }
        };
    }

    // --- end of URL rules ---

    /**
     * Methods that return plain values run on event-loop threads in WebFlux, outside any reactive
     * context: they must not need the exchange, nor a store that blocks. The rule is declared as the
     * annotated methods are created, so that the startup check, which resolves every one of them,
     * reports each that breaks it with every other mistake.
     */
    @Bean
    static BeanPostProcessor throttleEventLoopRule(ObjectProvider<ThrottleStore> throttleStore) {
        return new BeanPostProcessor() {

            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                if (bean instanceof ThrottledMethods methods) {
                    methods.requireReactiveReturnTypes(
                            !throttleStore.getObject().isNonBlocking());
                }
                return bean;
            }
        };
    }

    /**
     * The same rule once every singleton exists, for annotated methods created before the rule's
     * post-processor: then the methods resolved so far are checked.
     */
    @Bean
    static SmartInitializingSingleton throttleEventLoopRules(
            ObjectProvider<ThrottledMethods> throttledMethods, ObjectProvider<ThrottleStore> throttleStore) {
        return () -> throttledMethods.ifAvailable((methods) ->
                methods.requireReactiveReturnTypes(!throttleStore.getObject().isNonBlocking()));
    }
}
