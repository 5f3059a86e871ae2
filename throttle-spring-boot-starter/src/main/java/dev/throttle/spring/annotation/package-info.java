/**
 * The {@link dev.throttle.spring.annotation.Throttled} annotation.
 */
@NullMarked
package dev.throttle.spring.annotation;

import org.jspecify.annotations.NullMarked;
