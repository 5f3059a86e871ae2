package dev.throttle.spring.autoconfigure;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.web.filter.reactive.ServerWebExchangeContextFilter;
import org.springframework.web.reactive.DispatcherHandler;

import dev.throttle.ThrottleStore;
import dev.throttle.spring.internal.aop.ReactiveThrottleRequestContext;
import dev.throttle.spring.internal.aop.ThrottledMethods;
import dev.throttle.spring.web.ThrottleExceptionHandler;
import dev.throttle.spring.internal.web.WebFluxThrottleRequestContext;

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

	@Bean
	@ConditionalOnMissingBean(ReactiveThrottleRequestContext.class)
	WebFluxThrottleRequestContext reactiveThrottleRequestContext(ThrottleProperties properties) {
		return new WebFluxThrottleRequestContext(properties.getHttp().getHeaders() == ThrottleProperties.Headers.IETF,
				properties.getHttp().getIpv6Prefix());
	}

	@Bean
	@ConditionalOnMissingBean(ThrottleExceptionHandler.class)
	ThrottleExceptionHandler throttleExceptionHandler(ThrottleProperties properties) {
		return new ThrottleExceptionHandler(properties.getHttp().getHeaders() == ThrottleProperties.Headers.IETF);
	}

	/**
	 * Methods that return plain values run on event-loop threads in WebFlux, outside any reactive
	 * context: they must not need the exchange, nor a store that blocks. Checked at startup.
	 */
	@Bean
	static SmartInitializingSingleton throttleEventLoopRules(ObjectProvider<ThrottledMethods> throttledMethods,
			ObjectProvider<ThrottleStore> throttleStore) {
		return () -> throttledMethods
			.ifAvailable((methods) -> methods.requireReactiveReturnTypes(!throttleStore.getObject().isNonBlocking()));
	}

}
