/**
 * Applies {@code @Throttled}: the advisor, key evaluation and the one acquire, give-back and settle
 * flow. Implementation, not API.
 */
@NullMarked
package dev.throttle.spring.internal.aop;

import org.jspecify.annotations.NullMarked;
