/**
 * Rate-limit headers, client addresses and the request contexts of Spring MVC and WebFlux.
 * Implementation, not API.
 */
@NullMarked
package dev.throttle.spring.internal.web;

import org.jspecify.annotations.NullMarked;
