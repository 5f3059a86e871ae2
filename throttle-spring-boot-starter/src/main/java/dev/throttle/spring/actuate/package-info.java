/**
 * The {@code throttle} actuator endpoint.
 */
@NullMarked
package dev.throttle.spring.actuate;

import org.jspecify.annotations.NullMarked;
