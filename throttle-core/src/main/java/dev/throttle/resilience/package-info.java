/**
 * A failure policy for any {@link dev.throttle.ThrottleStore}: while the store cannot answer, a
 * {@link dev.throttle.resilience.FailureMode} does, and no call fails because of the store.
 */
@NullMarked
package dev.throttle.resilience;

import org.jspecify.annotations.NullMarked;
