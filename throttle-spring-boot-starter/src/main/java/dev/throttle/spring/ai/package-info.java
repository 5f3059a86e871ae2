/**
 * Spring AI: an advisor on {@code ChatClient} that charges a key's token budget (a user's, say) from
 * the usage the model reports, through the admission API. It reserves an estimate before the model
 * is called, refuses with a {@link dev.throttle.ThrottledException} when the budget has no room, and
 * settles the reported usage once the answer (or the stream) ends.
 */
@NullMarked
package dev.throttle.spring.ai;

import org.jspecify.annotations.NullMarked;
