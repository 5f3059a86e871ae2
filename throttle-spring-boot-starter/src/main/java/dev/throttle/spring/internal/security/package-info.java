/**
 * Where Spring Security logins are charged (every {@code ProviderManager}) and where their
 * refusals are answered (a servlet filter before Spring Security's). Implementation, not API.
 */
@NullMarked
package dev.throttle.spring.internal.security;

import org.jspecify.annotations.NullMarked;
