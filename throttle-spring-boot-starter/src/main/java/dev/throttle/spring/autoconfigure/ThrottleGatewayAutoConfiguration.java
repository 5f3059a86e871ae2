package dev.throttle.spring.autoconfigure;

import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.gateway.ThrottleRateLimiter;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.cloud.gateway.config.GatewayProperties;
import org.springframework.cloud.gateway.filter.FilterDefinition;
import org.springframework.cloud.gateway.filter.ratelimit.RateLimiter;
import org.springframework.cloud.gateway.route.RouteDefinition;
import org.springframework.cloud.gateway.support.ConfigurationService;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;

/**
 * Spring Cloud Gateway (its WebFlux server): the {@link ThrottleRateLimiter} bean
 * {@code throttleRateLimiter}, so that a route's {@code RequestRateLimiter} filter decides by a
 * policy under {@code throttle.policies}. It is the primary {@code RateLimiter}: a filter that names
 * none uses it, as the gateway uses its one {@code RateLimiter} (the gateway's own
 * {@code RedisRateLimiter}, which it defines whenever Spring Data Redis is present, stays available
 * by name, and decides the routes that give only its {@code redis-rate-limiter.} arguments).
 * {@code throttle.gateway.enabled=false} leaves the gateway as it was; with {@code throttle.enabled=false}
 * the routes that name a policy let every call through.
 */
@AutoConfiguration(
        after = ThrottleAutoConfiguration.class,
        beforeName = {
            "org.springframework.cloud.gateway.config.GatewayRedisAutoConfiguration",
            "org.springframework.cloud.gateway.config.GatewayAutoConfiguration"
        })
@ConditionalOnClass(
        name = {
            "org.springframework.cloud.gateway.filter.ratelimit.AbstractRateLimiter",
            "org.springframework.cloud.gateway.config.GatewayAutoConfiguration"
        })
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
@ConditionalOnProperty(name = "throttle.gateway.enabled", havingValue = "true", matchIfMissing = true)
public final class ThrottleGatewayAutoConfiguration {

    /** The name of the gateway's filter that asks a {@code RateLimiter}. */
    private static final String REQUEST_RATE_LIMITER = "RequestRateLimiter";

    /** The name of the gateway's own {@code RedisRateLimiter} bean. */
    private static final String REDIS_RATE_LIMITER = "redisRateLimiter";

    @Bean
    @Primary
    @ConditionalOnBooleanProperty(name = "throttle.enabled", matchIfMissing = true)
    @ConditionalOnBean(Admissions.class)
    @ConditionalOnMissingBean(ThrottleRateLimiter.class)
    ThrottleRateLimiter throttleRateLimiter(
            Admissions admissions,
            ThrottleProperties properties,
            ConfigurationService configurationService,
            BeanFactory beanFactory) {
        return new ThrottleRateLimiter(
                admissions,
                properties.getHttp().getHeaders() == ThrottleProperties.Headers.IETF,
                configurationService,
                redisRateLimiter(beanFactory));
    }

    /**
     * With throttling off, the routes that name a policy still need a {@code RateLimiter} for their
     * {@code RequestRateLimiter} filter, or the gateway does not start: one that lets every call through.
     */
    @Bean
    @Primary
    @ConditionalOnBooleanProperty(name = "throttle.enabled", havingValue = false)
    @ConditionalOnMissingBean(ThrottleRateLimiter.class)
    ThrottleRateLimiter unthrottledRateLimiter(
            ConfigurationService configurationService, BeanFactory beanFactory, ThrottleProperties properties) {
        return ThrottleRateLimiter.unthrottled(
                configurationService,
                redisRateLimiter(beanFactory),
                properties.getPolicies().keySet());
    }

    /**
     * A route in the properties whose {@code RequestRateLimiter} filter gives this limiter no argument
     * would fail each of its requests (500): nothing tells the limiter of such a route before its first
     * request. Found at startup instead, where the routes are in {@code spring.cloud.gateway} properties.
     */
    @Bean
    @ConditionalOnBooleanProperty(name = "throttle.enabled", matchIfMissing = true)
    SmartInitializingSingleton throttleRoutesCheck(
            ObjectProvider<GatewayProperties> gateway, ObjectProvider<RateLimiter<?>> rateLimiters) {
        return () -> {
            GatewayProperties properties = gateway.getIfAvailable();
            if (properties == null || !(rateLimiters.getIfUnique() instanceof ThrottleRateLimiter)) {
                return;
            }
            List<String> problems = new ArrayList<>();
            for (RouteDefinition route : properties.getRoutes()) {
                for (FilterDefinition filter : route.getFilters()) {
                    if (REQUEST_RATE_LIMITER.equals(filter.getName())
                            && namesNoLimiter(filter.getArgs().keySet())) {
                        problems.add("Route '" + route.getId() + "': its RequestRateLimiter filter uses throttle's "
                                + "RateLimiter without naming a policy: add the argument "
                                + ThrottleRateLimiter.CONFIGURATION_PROPERTY_NAME + ".policy");
                    }
                }
            }
            if (!problems.isEmpty()) {
                throw new ThrottleConfigurationException(problems);
            }
        };
    }

    /** Whether a filter's arguments name no rate limiter: neither throttle's, the gateway's Redis one, nor a bean. */
    private static boolean namesNoLimiter(Set<String> arguments) {
        for (String argument : arguments) {
            if (argument.startsWith(ThrottleRateLimiter.CONFIGURATION_PROPERTY_NAME + ".")
                    || argument.startsWith("redis-rate-limiter.")
                    || argument.equals("rate-limiter")
                    || argument.equals("rateLimiter")
                    // the shortcut form (RequestRateLimiter=...) names its arguments by position
                    || argument.startsWith("_genkey_")) {
                return false;
            }
        }
        return true;
    }

    /** Looked up when a route is bound: the gateway defines it after this bean, and only with Redis. */
    private static Supplier<@Nullable RateLimiter<?>> redisRateLimiter(BeanFactory beanFactory) {
        return () -> (beanFactory.containsBean(REDIS_RATE_LIMITER)
                        && beanFactory.getBean(REDIS_RATE_LIMITER) instanceof RateLimiter<?> redis)
                ? redis
                : null;
    }
}
