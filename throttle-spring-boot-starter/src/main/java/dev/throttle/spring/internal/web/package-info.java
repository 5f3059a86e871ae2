/**
 * Rate-limit headers, client addresses, the request contexts of Spring MVC and WebFlux, the URL
 * rules and their filters, the safelist and blocklist, and the answers to a refusal outside and
 * inside the handler's exception handling (problem+json, or the error page for a browser).
 * Implementation, not API.
 */
@NullMarked
package dev.throttle.spring.internal.web;

import org.jspecify.annotations.NullMarked;
