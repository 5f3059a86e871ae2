package dev.throttle.spring.autoconfigure;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;

import dev.throttle.ThrottleStore;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.redis.RedisThrottleStore;

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

	@Bean
	@ConditionalOnMissingBean(ThrottleStore.class)
	ResilientThrottleStore throttleStore(ObjectProvider<ReactiveRedisConnectionFactory> connectionFactory,
			ThrottleProperties properties, TimeSource throttleTimeSource) {
		ThrottleProperties.Redis redis = properties.getStore().getRedis();
		// checked whatever the failure mode, so that one setting gets one answer on every store type
		long localMaximumKeys = MemoryStoreConfiguration.maximumKeys(properties);
		ReactiveRedisConnectionFactory factory = connectionFactory.getIfAvailable();
		if (factory == null) {
			throw new ThrottleConfigurationException("throttle.store.type=redis needs Spring Boot's Lettuce connection "
					+ "(a ReactiveRedisConnectionFactory): use spring-boot-starter-data-redis with "
					+ "spring.data.redis.client-type=lettuce (the default), not Jedis");
		}
		RedisThrottleStore store;
		try {
			store = new RedisThrottleStore(factory, redis.getKeyPrefix(), redis.getTimeout());
		}
		catch (IllegalArgumentException ex) {
			throw new ThrottleConfigurationException(ex.getMessage(), ex);
		}
		FailureMode mode = redis.getFailureMode();
		MemoryThrottleStore local = (mode == FailureMode.LOCAL)
				? new MemoryThrottleStore(throttleTimeSource, localMaximumKeys) : null;
		return new ResilientThrottleStore(store, mode, local, throttleTimeSource);
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
			throw new ThrottleConfigurationException("throttle.store.type=redis needs Spring Data Redis on the "
					+ "classpath: add org.springframework.boot:spring-boot-starter-data-redis, or set throttle.store.type=memory");
		}

	}

}
