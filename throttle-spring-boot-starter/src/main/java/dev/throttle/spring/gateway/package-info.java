/**
 * Spring Cloud Gateway: a {@link org.springframework.cloud.gateway.filter.ratelimit.RateLimiter} for
 * the {@code RequestRateLimiter} filter that decides by the configured policies and store.
 */
@NullMarked
package dev.throttle.spring.gateway;

import org.jspecify.annotations.NullMarked;
