/**
 * Auto-configuration of throttling and its {@code throttle.*} properties.
 */
@NullMarked
package dev.throttle.spring.autoconfigure;

import org.jspecify.annotations.NullMarked;
