/**
 * The memory store, bounded and lock-free, and the SPI through which an algorithm plugs its transition into it.
 */
@NullMarked
package dev.throttle.memory;

import org.jspecify.annotations.NullMarked;
