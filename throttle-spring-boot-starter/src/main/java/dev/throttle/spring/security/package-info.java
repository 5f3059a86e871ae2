/**
 * Throttling of Spring Security logins: {@code throttle.security.authentication}.
 */
@NullMarked
package dev.throttle.spring.security;

import org.jspecify.annotations.NullMarked;
