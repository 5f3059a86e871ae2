package dev.throttle;

/**
 * One policy's state transition, in Java: what an {@link Algorithm} gives a store that keeps its
 * state in this process ({@link Algorithm#transitionOf(Policy, Rates)}). The algorithm chooses the
 * shape of a key's state, one {@code long} ({@link PackedTransition}) or an immutable
 * {@code long[]} ({@link ArrayTransition}); the store chooses where that state lives and how it is
 * committed atomically (the memory store: a cell per key in a cache, compare-and-set), and never
 * learns which algorithm it runs. A store that runs transitions elsewhere (the Redis store, in Lua)
 * has its own twin of each and takes the policy's numbers ({@link Algorithm#numbersOf(Policy)}).
 *
 * <p>Every transition is a pure function of its arguments and the policy's numbers: it may run
 * more than once per decision under contention, and allocates nothing on a refusal but its
 * {@link Decision}. Times are the store clock's milliseconds; a state stamped after {@code now} (a
 * clock that stepped back) is kept and read as it is, never taken for no state, since forgetting
 * it would hand the key a fresh quota.
 */
public sealed interface Transition permits PackedTransition, ArrayTransition {}
