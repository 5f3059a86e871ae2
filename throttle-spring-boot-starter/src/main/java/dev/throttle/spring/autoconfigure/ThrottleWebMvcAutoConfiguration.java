package dev.throttle.spring.autoconfigure;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.web.servlet.DispatcherServlet;

import dev.throttle.spring.internal.aop.ThrottleRequestContext;
import dev.throttle.spring.internal.web.ServletThrottleRequestContext;
import dev.throttle.spring.web.ThrottleExceptionHandler;

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
	ServletThrottleRequestContext throttleRequestContext(ThrottleProperties properties) {
		return new ServletThrottleRequestContext(properties.getHttp().getHeaders() == ThrottleProperties.Headers.IETF,
				properties.getHttp().getIpv6Prefix());
	}

	@Bean
	@ConditionalOnMissingBean(ThrottleExceptionHandler.class)
	ThrottleExceptionHandler throttleExceptionHandler(ThrottleProperties properties) {
		return new ThrottleExceptionHandler(properties.getHttp().getHeaders() == ThrottleProperties.Headers.IETF);
	}

}
