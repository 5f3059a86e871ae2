/**
 * Per-key throttling: the {@link dev.throttle.Throttler}, its {@link dev.throttle.Decision}s, the policies with their algorithms' transitions, and the store SPI.
 */
@NullMarked
package dev.throttle;

import org.jspecify.annotations.NullMarked;
