/**
 * Micrometer meters for throttling decisions and the memory store.
 */
@NullMarked
package dev.throttle.spring.metrics;

import org.jspecify.annotations.NullMarked;
