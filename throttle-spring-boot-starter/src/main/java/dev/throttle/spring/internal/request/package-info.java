/**
 * What every entry point shares about the request a call runs in: its client address and
 * principal, the rate-limit headers it is told, and which policies are in shadow mode.
 * Implementation, not API.
 */
@NullMarked
package dev.throttle.spring.internal.request;

import org.jspecify.annotations.NullMarked;
