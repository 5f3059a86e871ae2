/**
 * Temporary bans across policies: a key that the listed policies refuse too often is refused on
 * every request for a while. Counted in the store, held in memory by every instance, shared by a
 * fleet through {@link dev.throttle.spring.bans.SharedBans}.
 */
@NullMarked
package dev.throttle.spring.bans;

import org.jspecify.annotations.NullMarked;
