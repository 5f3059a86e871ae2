package dev.throttle.memory;

import dev.throttle.Decision;

/**
 * SPI for algorithms: an algorithm's transition in the memory store when a key's state fits in
 * one {@code long}. The store keeps the state, commits it by compare-and-set and calls these
 * methods with the state it read; they are pure functions of their arguments (the policy's numbers
 * aside), may run more than once per decision under contention, and must not allocate anything
 * but the {@link Decision} they return. {@link MemoryCells} packs a count and a time into a state.
 *
 * <p>Times are the store clock's milliseconds. A state stamped after {@code now} (a clock that
 * stepped back) is kept and read as it is, never taken for no state: forgetting it would hand the
 * key a fresh quota. The Lua twin of each transition does the same.
 *
 * @see MemoryCells#packed(PackedTransition)
 */
public interface PackedTransition {

	/** The state of a key never used, or reset. Below every state that {@link MemoryCells} packs. */
	long EMPTY = Long.MIN_VALUE;

	/** What {@link #acquire} returns for a refused call. */
	long REJECTED = Long.MIN_VALUE + 1;

	/**
	 * Decides a call.
	 * @param state the key's state, {@link #EMPTY} when it has none
	 * @param now the time
	 * @param cost units the call takes, between 1 and the policy's maximum cost
	 * @return the state after allowing the call, or {@link #REJECTED}; a refusal writes nothing
	 */
	long acquire(long state, long now, int cost);

	/**
	 * Returns what an allowed call is told: with the time until its next unit, and the receipt that
	 * lets {@link #refund(long, long, int, long)} undo exactly this call (see
	 * {@link Decision#allow(int, int, long, long, long)}).
	 * @param next the state {@link #acquire} returned, now committed
	 * @param now the time
	 * @return the decision
	 */
	Decision allowed(long next, long now);

	/**
	 * Returns what a refused call is told.
	 * @param state the state {@link #acquire} refused the call against
	 * @param now the time
	 * @param cost units the call asked for
	 * @return the decision
	 */
	Decision rejected(long state, long now, int cost);

	/**
	 * Returns what a call of cost 1 would be told, changing nothing.
	 * @param state the key's state, {@link #EMPTY} when it has none
	 * @param now the time
	 * @return the decision
	 */
	Decision peek(long state, long now);

	/**
	 * Gives back what an allowed call took, without knowing which call (as
	 * {@link dev.throttle.Limiter#refund(String, int)}).
	 * @param state the key's state, never {@link #EMPTY}
	 * @param now the time
	 * @param cost units to give back
	 * @return the state after the refund, {@link #EMPTY} when that is neutral
	 */
	long refund(long state, long now, int cost);

	/**
	 * Gives back exactly what one allowed call took, identified by the receipt its decision carried
	 * (whatever the transition stamped in {@link #allowed}), or nothing once that is gone: never what
	 * a later call took. The default ignores the receipt, for transitions that stamp none.
	 * @param state the key's state, never {@link #EMPTY}
	 * @param now the time
	 * @param cost units that call took
	 * @param receipt the receipt of that call's decision, never 0
	 * @return the state after the refund ({@code state} itself when nothing is given back),
	 * {@link #EMPTY} when that is neutral
	 */
	default long refund(long state, long now, int cost, long receipt) {
		return refund(state, now, cost);
	}

}
