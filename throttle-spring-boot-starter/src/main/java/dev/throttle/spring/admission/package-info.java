/**
 * The one admission pipeline every entry point goes through: a {@link Charge} binds a policy to
 * the store with a plan, a cost and how a success settles; {@link Admission#decide} takes from each
 * charge of a call, once and in order, and refuses with a {@link dev.throttle.ThrottledException};
 * the {@link Admission} it returns is the handle that settles the call exactly once. The annotation,
 * URL rules, Spring Security logins and anything an application writes itself (a message listener, a
 * job runner) are thin adapters over these types.
 */
@NullMarked
package dev.throttle.spring.admission;

import org.jspecify.annotations.NullMarked;
