package dev.throttle.spring.autoconfigure;

import dev.throttle.ThrottleStore;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.bans.SharedBans;
import dev.throttle.spring.fleet.SharedPolicyChanges;
import dev.throttle.spring.redis.NearCacheSettings;
import dev.throttle.spring.redis.RedisSharedBans;
import dev.throttle.spring.redis.RedisSharedPolicyChanges;
import dev.throttle.spring.redis.RedisThrottleStore;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/**
 * The Redis store, with {@code throttle.store.type=redis}, on Spring Boot's own Redis connection
 * ({@code spring.data.redis.*}: standalone, Sentinel or Cluster), wrapped in the failure mode, and
 * warmed up before the web server starts ({@link ThrottleStoreWarmUp}). A Redis that is down at
 * startup is not a startup failure: the failure mode applies until it is back.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty(name = "throttle.store.type", havingValue = "redis")
@ConditionalOnClass(ReactiveRedisConnectionFactory.class)
class RedisStoreConfiguration {

    /** The longest the start waits for Redis to answer whether it runs TIME inside scripts. */
    private static final java.time.Duration CLOCK_CHECK_BOUND = java.time.Duration.ofSeconds(2);

    @Bean
    @ConditionalOnMissingBean(ThrottleStore.class)
    ResilientThrottleStore throttleStore(
            ObjectProvider<ReactiveRedisConnectionFactory> connectionFactory,
            ThrottleProperties properties,
            TimeSource throttleTimeSource,
            RedisConnectsStop connectsStop) {
        ThrottleProperties.Redis redis = properties.getStore().getRedis();
        // checked whatever the failure mode, so that one setting gets one answer on every store type
        long localMaximumKeys = MemoryStoreConfiguration.maximumKeys(properties);
        ReactiveRedisConnectionFactory factory = connectionFactory.getIfAvailable();
        if (factory == null) {
            throw new ThrottleConfigurationException("throttle.store.type=redis needs Spring Boot's Lettuce connection "
                    + "(a ReactiveRedisConnectionFactory): use spring-boot-starter-data-redis with "
                    + "spring.data.redis.client-type=lettuce (the default), not Jedis");
        }
        boolean clientClock = redis.getClock() == ThrottleProperties.RedisClock.CLIENT;
        RedisThrottleStore store;
        try {
            store = new RedisThrottleStore(
                    factory,
                    redis.getKeyPrefix(),
                    redis.getTimeout(),
                    clientClock ? throttleTimeSource : null,
                    nearCache(properties),
                    redis.isBatching(),
                    PolicyDurability.replicated(properties));
        } catch (IllegalArgumentException ex) {
            throw new ThrottleConfigurationException(ex.getMessage(), ex);
        }
        connectsStop.add(store::stopConnecting);
        if (!clientClock) {
            checkServerClock(store);
        }
        FailureMode mode = redis.getFailureMode();
        Map<String, FailureMode> policyModes = new LinkedHashMap<>();
        properties.getPolicies().forEach((name, policy) -> {
            if (policy.getFailureMode() != null) {
                policyModes.put(name, policy.getFailureMode());
            }
        });
        boolean anyLocal = mode == FailureMode.LOCAL || policyModes.containsValue(FailureMode.LOCAL);
        MemoryThrottleStore local = anyLocal ? new MemoryThrottleStore(throttleTimeSource, localMaximumKeys) : null;
        return new ResilientThrottleStore(store, mode, local, throttleTimeSource, policyModes);
    }

    /**
     * The near cache: on for every policy but those that give back every successful call
     * ({@code count: failures}, or a Spring Security ip-policy that does not set its count, which
     * counts failures only), unless a policy says otherwise.
     */
    private static NearCacheSettings nearCache(ThrottleProperties properties) {
        ThrottleProperties.NearCache nearCache =
                properties.getStore().getRedis().getNearCache();
        if (!nearCache.isEnabled()) {
            return NearCacheSettings.disabled();
        }
        NearCacheSettings settings = NearCacheSettings.of(nearCache.getMaximumKeys(), nearCache.getMinimumRetryAfter());
        String loginIpPolicy = properties.getSecurity().getAuthentication().getIpPolicy();
        for (Map.Entry<String, ThrottleProperties.Policy> policy :
                properties.getPolicies().entrySet()) {
            Boolean own = policy.getValue().getNearCache();
            boolean failuresOnly = policy.getValue().getCount() == ThrottleProperties.Count.FAILURES
                    || (policy.getKey().equals(loginIpPolicy)
                            && !policy.getValue().hasCount());
            boolean answers = (own != null) ? own : !failuresOnly;
            settings = settings.withPolicy(policy.getKey(), answers);
        }
        return settings;
    }

    /**
     * Fails the start when Redis refuses {@code TIME} inside scripts, which every decision on the
     * server's clock runs, naming the property that avoids it. A Redis that does not answer is no
     * failure: the failure mode applies.
     */
    private static void checkServerClock(RedisThrottleStore store) {
        String refusal = store.serverTimeRefusal(CLOCK_CHECK_BOUND);
        if (refusal != null) {
            store.close();
            throw new ThrottleConfigurationException("Redis refuses TIME inside scripts (" + refusal + "), which "
                    + "throttle.store.redis.clock=server (the default) needs: set throttle.store.redis.clock=client to "
                    + "pass the application's time with each call instead (decisions then shift by the clock skew "
                    + "between application servers)");
        }
    }

    /**
     * Policy changes made at run time, stored in Redis and heard by every instance sharing it.
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(SharedPolicyChanges.class)
    @ConditionalOnBean(RedisConnectionFactory.class)
    SharedPolicyChanges throttleSharedPolicyChanges(
            RedisConnectionFactory connectionFactory, ThrottleProperties properties, RedisConnectsStop connectsStop) {
        RedisSharedPolicyChanges changes = new RedisSharedPolicyChanges(
                connectionFactory, properties.getStore().getRedis().getKeyPrefix());
        connectsStop.add(changes::close);
        return changes;
    }

    /**
     * Bans, stored in Redis and heard by every instance sharing it.
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(SharedBans.class)
    @ConditionalOnBean(RedisConnectionFactory.class)
    SharedBans throttleSharedBans(
            RedisConnectionFactory connectionFactory, ThrottleProperties properties, RedisConnectsStop connectsStop) {
        RedisSharedBans bans = new RedisSharedBans(
                connectionFactory,
                properties.getStore().getRedis().getKeyPrefix(),
                PolicyDurability.replicatedBans(properties),
                properties.getStore().getRedis().getTimeout());
        // the fleet's plumbing, not decisions: closed whole once the web server is stopped
        connectsStop.add(bans::close);
        return bans;
    }

    @Bean
    static RedisConnectsStop throttleRedisConnectsStop() {
        return new RedisConnectsStop();
    }

    @Bean
    ThrottleStoreWarmUp throttleStoreWarmUp(ObjectProvider<Throttler> throttler) {
        return new ThrottleStoreWarmUp(throttler);
    }

    /**
     * {@code store.type=redis} without Spring Data Redis: fail at startup, saying what to add.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnProperty(name = "throttle.store.type", havingValue = "redis")
    @ConditionalOnMissingClass("org.springframework.data.redis.connection.ReactiveRedisConnectionFactory")
    static class RedisMissingConfiguration {

        @Bean
        @ConditionalOnMissingBean(ThrottleStore.class)
        ThrottleStore throttleStore() {
            throw new ThrottleConfigurationException(
                    "throttle.store.type=redis needs Spring Data Redis on the "
                            + "classpath: add org.springframework.boot:spring-boot-starter-data-redis, or set throttle.store.type=memory");
        }
    }
}
