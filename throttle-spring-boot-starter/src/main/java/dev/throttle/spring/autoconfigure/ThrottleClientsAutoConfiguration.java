package dev.throttle.spring.autoconfigure;

import dev.throttle.ThrottleStore;
import dev.throttle.TimeSource;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.client.OutgoingCallListener;
import dev.throttle.spring.client.RemotePauses;
import dev.throttle.spring.client.ThrottledClients;
import dev.throttle.spring.client.ThrottledWebClients;
import dev.throttle.spring.jdbc.JdbcThrottleStore;
import dev.throttle.spring.metrics.MicrometerOutgoingCallListener;
import dev.throttle.spring.redis.RedisThrottleStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.web.client.RestClient;
import org.springframework.web.reactive.function.client.ExchangeFilterFunction;
import org.springframework.web.reactive.function.client.WebClient;

/**
 * Throttled outgoing calls ({@code throttle.clients}): the {@link ThrottledClients} bean, checked at
 * startup (every mistake names its property); its interceptor added to the {@code RestClient} and
 * {@code RestTemplate} builders of Spring Boot 4 (through their customizers, which also reach the
 * {@code @HttpExchange} clients of HTTP service groups on {@code RestClient}) and to every
 * {@code RestClient.Builder} bean on Spring Boot 3.5; its filter function added to Spring Boot 4's
 * {@code WebClient} builder (through its customizer, which also reaches the {@code @HttpExchange}
 * clients of HTTP service groups on {@code WebClient}) and to every {@code WebClient.Builder} bean,
 * once per builder, so that a request is charged once. Remote pauses
 * are kept in Redis with the Redis store (shared by every instance), in memory otherwise. Active only
 * when some client is configured, so that no HTTP client of an application without one is touched.
 */
@AutoConfiguration(after = ThrottleAutoConfiguration.class)
@ConditionalOnBooleanProperty(name = "throttle.enabled", matchIfMissing = true)
@ConditionalOnClass(name = "org.springframework.http.client.ClientHttpRequestInterceptor")
@Conditional(ThrottleClientsAutoConfiguration.OnClientsConfigured.class)
@Import(ThrottleClientsAutoConfiguration.Boot4Customizers.class)
public final class ThrottleClientsAutoConfiguration {

    private static final Log logger = LogFactory.getLog(ThrottleClientsAutoConfiguration.class);

    private static final String PREFIX = "throttle.clients.";

    /**
     * Where remote pauses are kept: in Redis with the Redis store, in the database with the jdbc
     * store, so that a pause one instance hears holds every instance back; in memory otherwise.
     */
    @Bean
    @ConditionalOnMissingBean
    RemotePauses throttleRemotePauses(ThrottleStore store, TimeSource clock, ThrottleProperties properties) {
        ThrottleStore primary = (store instanceof ResilientThrottleStore resilient) ? resilient.store() : store;
        RemotePauses shared = isRedis(primary) ? RedisStore.pausesOf(primary) : null;
        if (shared == null && primary instanceof JdbcThrottleStore jdbc) {
            shared = jdbc.remotePauses();
        }
        if (shared != null) {
            return shared;
        }
        boolean honors =
                properties.getClients().values().stream().anyMatch(ThrottleProperties.Client::isHonorRemoteLimits);
        if (honors && !primary.kind().equals("memory")) {
            logger.info("Remote pauses of throttled clients are kept in each instance's memory: the " + primary.kind()
                    + " store does not keep them, so an instance honours the pauses that it hears itself");
        }
        return RemotePauses.inMemory(clock);
    }

    /** Whether the store is the Redis one, without loading Redis's classes when they are absent. */
    private static boolean isRedis(ThrottleStore store) {
        return store.kind().equals("redis")
                && org.springframework.util.ClassUtils.isPresent(
                        "org.springframework.data.redis.connection.ReactiveRedisConnectionFactory",
                        ThrottleClientsAutoConfiguration.class.getClassLoader());
    }

    /** Kept apart so that {@code instanceof} loads the Redis store's class only when Redis is there. */
    private static final class RedisStore {

        static @Nullable RemotePauses pausesOf(ThrottleStore store) {
            return (store instanceof RedisThrottleStore redis) ? redis.remotePauses() : null;
        }
    }

    @Bean
    @ConditionalOnMissingBean
    ThrottledClients throttledClients(
            ThrottleProperties properties,
            Admissions admissions,
            RemotePauses pauses,
            ObjectProvider<OutgoingCallListener> listener,
            TimeSource clock) {
        List<ThrottledClients.Definition> definitions = new ArrayList<>();
        for (Map.Entry<String, ThrottleProperties.Client> entry :
                properties.getClients().entrySet()) {
            ThrottleProperties.Client client = entry.getValue();
            ThrottledClients.Definition definition = new ThrottledClients.Definition(
                    entry.getKey(),
                    client.getBaseUrl(),
                    client.getHosts(),
                    client.getPolicy(),
                    client.getKey(),
                    client.getWait(),
                    client.isHonorRemoteLimits());
            PolicyFactory.failIfItHasMistakes(properties.getPolicies(), client.getPolicy());
            try {
                // each client on its own, so that a mistake names the client it is in
                new ThrottledClients(List.of(definition), admissions, pauses, OutgoingCallListener.NONE, clock);
            } catch (IllegalArgumentException ex) {
                throw new ThrottleConfigurationException(PREFIX + entry.getKey() + "." + ex.getMessage());
            }
            definitions.add(definition);
        }
        return new ThrottledClients(
                definitions, admissions, pauses, listener.getIfAvailable(() -> OutgoingCallListener.NONE), clock);
    }

    /** {@code throttle.client.calls} and {@code throttle.client.pauses}, when Micrometer is there. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.micrometer.core.instrument.binder.MeterBinder")
    static class OutgoingCallMetrics {

        @Bean
        @ConditionalOnMissingBean(OutgoingCallListener.class)
        MicrometerOutgoingCallListener throttleOutgoingCallMetrics() {
            return new MicrometerOutgoingCallListener();
        }
    }

    /**
     * The {@link ThrottledWebClients} bean, and its filter function on every {@code WebClient} that
     * Spring Boot builds. Spring Boot 4 builds its {@code WebClient.Builder} bean and the client of each
     * HTTP service group on {@code WebClient} (a builder of its own, not a bean) with its
     * {@code WebClientCustomizer}s, so the customizer reaches both; a bean post-processor reaches every
     * {@code WebClient.Builder} bean besides (Spring Boot 3.5's builder, whose customizer lives in
     * another package, or one the application declares itself). A builder both customized and
     * post-processed would otherwise carry the filter twice and charge each request twice: both add it
     * only to a builder that does not carry it yet.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.web.reactive.function.client.WebClient")
    static class WebClientBuilders {

        @Bean
        @ConditionalOnMissingBean
        ThrottledWebClients throttledWebClients(ThrottledClients clients) {
            return new ThrottledWebClients(clients);
        }

        @Bean
        static BeanPostProcessor throttleWebClientBuilders(ObjectProvider<ThrottledWebClients> clients) {
            return new BeanPostProcessor() {
                @Override
                public Object postProcessAfterInitialization(Object bean, String beanName) {
                    if (bean instanceof WebClient.Builder builder) {
                        addOnce(builder, clients.getObject().filter());
                    }
                    return bean;
                }
            };
        }

        /** Adds the filter unless the builder carries it already (the same instance: one per application). */
        static void addOnce(WebClient.Builder builder, ExchangeFilterFunction filter) {
            builder.filters((filters) -> {
                if (!filters.contains(filter)) {
                    filters.add(filter);
                }
            });
        }

        /** Spring Boot 4's WebClient customizer (module spring-boot-webclient). */
        @Configuration(proxyBeanMethods = false)
        @ConditionalOnClass(name = "org.springframework.boot.webclient.WebClientCustomizer")
        static class Boot4Customizer {

            @Bean
            org.springframework.boot.webclient.WebClientCustomizer throttleWebClientCustomizer(
                    ThrottledWebClients clients) {
                return (builder) -> addOnce(builder, clients.filter());
            }
        }
    }

    /**
     * On Spring Boot 3.5, whose customizers live in another package than Boot 4's: every
     * {@code RestClient.Builder} bean gets the interceptor (a RestTemplate takes the interceptor
     * explicitly there).
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.web.client.RestClient")
    @ConditionalOnMissingClass("org.springframework.boot.restclient.RestClientCustomizer")
    static class RestClientBuilders {

        @Bean
        static BeanPostProcessor throttleRestClientBuilders(ObjectProvider<ThrottledClients> clients) {
            return new BeanPostProcessor() {
                @Override
                public Object postProcessAfterInitialization(Object bean, String beanName) {
                    if (bean instanceof RestClient.Builder builder) {
                        builder.requestInterceptor(clients.getObject().interceptor());
                    }
                    return bean;
                }
            };
        }
    }

    /** Spring Boot 4's RestClient and RestTemplate customizers (module spring-boot-restclient). */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.restclient.RestClientCustomizer")
    static class Boot4Customizers {

        @Bean
        org.springframework.boot.restclient.RestClientCustomizer throttleRestClientCustomizer(
                ThrottledClients clients) {
            return (builder) -> builder.requestInterceptor(clients.interceptor());
        }

        @Bean
        org.springframework.boot.restclient.RestTemplateCustomizer throttleRestTemplateCustomizer(
                ThrottledClients clients) {
            return (template) -> template.getInterceptors().add(clients.interceptor());
        }
    }

    /** Whether some {@code throttle.clients.<name>} is configured. */
    static final class OnClientsConfigured extends OnEntriesConfigured {

        OnClientsConfigured() {
            super("throttle.clients");
        }
    }
}
