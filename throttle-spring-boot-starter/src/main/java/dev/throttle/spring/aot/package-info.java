/**
 * What the starter tells Spring AOT: runtime hints for native images.
 */
@NullMarked
package dev.throttle.spring.aot;

import org.jspecify.annotations.NullMarked;
