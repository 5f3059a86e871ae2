package dev.throttle.spring.autoconfigure;

import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.gateway.ThrottleRateLimiter;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.cloud.gateway.filter.ratelimit.RateLimiter;
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
    ThrottleRateLimiter unthrottledRateLimiter(ConfigurationService configurationService, BeanFactory beanFactory) {
        return ThrottleRateLimiter.unthrottled(configurationService, redisRateLimiter(beanFactory));
    }

    /** Looked up when a route is bound: the gateway defines it after this bean, and only with Redis. */
    private static Supplier<@Nullable RateLimiter<?>> redisRateLimiter(BeanFactory beanFactory) {
        return () -> (beanFactory.containsBean(REDIS_RATE_LIMITER)
                        && beanFactory.getBean(REDIS_RATE_LIMITER) instanceof RateLimiter<?> redis)
                ? redis
                : null;
    }
}
