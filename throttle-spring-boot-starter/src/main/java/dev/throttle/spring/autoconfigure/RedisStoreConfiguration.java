package dev.throttle.spring.autoconfigure;

import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.throttle.ThrottleStore;
import dev.throttle.spring.ThrottleConfigurationException;

/**
 * The Redis store, with {@code throttle.store.type=redis}.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty(name = "throttle.store.type", havingValue = "redis")
class RedisStoreConfiguration {

	/**
	 * {@code store.type=redis} without Spring Data Redis: fail at startup, saying what to add.
	 */
	@Configuration(proxyBeanMethods = false)
	@ConditionalOnProperty(name = "throttle.store.type", havingValue = "redis")
	@ConditionalOnMissingClass("org.springframework.data.redis.connection.RedisConnectionFactory")
	static class RedisMissingConfiguration {

		@Bean
		@ConditionalOnMissingBean(ThrottleStore.class)
		ThrottleStore throttleStore() {
			throw new ThrottleConfigurationException("throttle.store.type=redis needs Spring Data Redis on the "
					+ "classpath: add org.springframework.boot:spring-boot-starter-data-redis, or set throttle.store.type=memory");
		}

	}

}
