/**
 * Micrometer's Observation API for throttling decisions: the {@code throttle.decision} observation,
 * which a tracing bridge turns into a span around the store's call.
 */
@NullMarked
package dev.throttle.spring.observation;

import org.jspecify.annotations.NullMarked;
