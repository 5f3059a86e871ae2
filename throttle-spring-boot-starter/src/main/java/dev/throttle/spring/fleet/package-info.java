/**
 * What a fleet of instances shares through its store beyond the keys' state: policy changes made at
 * run time, stored with a version and heard by every instance.
 */
@NullMarked
package dev.throttle.spring.fleet;

import org.jspecify.annotations.NullMarked;
