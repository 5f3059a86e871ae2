/**
 * Spring integration of throttling: what the starter's packages share.
 */
@NullMarked
package dev.throttle.spring;

import org.jspecify.annotations.NullMarked;
