/**
 * The Redis store: one Lua script per policy, on Spring Boot's Lettuce connection.
 */
@NullMarked
package dev.throttle.spring.redis;

import org.jspecify.annotations.NullMarked;
