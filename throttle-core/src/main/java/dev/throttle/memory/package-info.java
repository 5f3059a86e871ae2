/**
 * The memory store, bounded and lock-free: it runs each algorithm's Java transition over a cell per key.
 */
@NullMarked
package dev.throttle.memory;

import org.jspecify.annotations.NullMarked;
