/**
 * HTTP refusals (429, problem+json) and rate-limit headers for Spring MVC and WebFlux.
 */
@NullMarked
package dev.throttle.spring.web;

import org.jspecify.annotations.NullMarked;
