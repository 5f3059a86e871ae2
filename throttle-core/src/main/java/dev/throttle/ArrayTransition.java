package dev.throttle;

/**
 * An algorithm's {@link Transition} when a key's state is a list of numbers, such as the times of
 * recent attempts, or one packed state per limit of a policy with several limits. The state is an
 * immutable {@code long[]}: a store swaps whole arrays (the memory store by compare-and-set), so a
 * transition never changes an array it is given, and returns a new one (or one it was given)
 * instead. Otherwise as {@link PackedTransition}: pure, may run more than once per decision,
 * allocates nothing on a refusal but its {@link Decision}, and keeps state stamped after {@code now}.
 */
public non-sealed interface ArrayTransition extends Transition {

    /** The state of a key never used, or reset. */
    long[] EMPTY = {};

    /**
     * Decides a call.
     * @param state the key's state, {@link #EMPTY} when it has none
     * @param now the time
     * @param cost units the call takes, between 1 and the policy's maximum cost
     * @return the state after allowing the call, or null when the call is refused
     */
    long[] acquire(long[] state, long now, int cost);

    /**
     * Returns what an allowed call is told, with the time until its next unit and its receipt (as
     * {@link PackedTransition#allowed}).
     * @param next the state {@link #acquire} returned, now committed
     * @param now the time
     * @return the decision
     */
    Decision allowed(long[] next, long now);

    /**
     * Returns what a refused call is told.
     * @param state the state {@link #acquire} refused the call against
     * @param now the time
     * @param cost units the call asked for
     * @return the decision
     */
    Decision rejected(long[] state, long now, int cost);

    /**
     * Returns what a call of cost 1 would be told, changing nothing.
     * @param state the key's state, {@link #EMPTY} when it has none
     * @param now the time
     * @return the decision
     */
    Decision peek(long[] state, long now);

    /**
     * Gives back what an allowed call took, without knowing which call.
     * @param state the key's state, never empty
     * @param now the time
     * @param cost units to give back
     * @return the state after the refund
     */
    long[] refund(long[] state, long now, int cost);

    /**
     * Gives back exactly what one allowed call took, identified by the receipt its decision carried,
     * or nothing once that is gone. The default ignores the receipt, for transitions that stamp none.
     * @param state the key's state, never empty
     * @param now the time
     * @param cost units that call took
     * @param receipt the receipt of that call's decision, never 0
     * @return the state after the refund ({@code state} itself when nothing is given back)
     */
    default long[] refund(long[] state, long now, int cost, long receipt) {
        return refund(state, now, cost);
    }

    /**
     * Gives back exactly what one allowed call took, identified by its decision (for transitions
     * whose decisions carry a receipt per limit, see {@link Decision#limit(int)}). The default
     * refunds by the decision's receipt, as {@link #refund(long[], long, int, long)}, or without one.
     * @param state the key's state, never empty
     * @param now the time
     * @param cost units that call took
     * @param taken that call's decision
     * @return the state after the refund ({@code state} itself when nothing is given back)
     */
    default long[] refund(long[] state, long now, int cost, Decision taken) {
        return (taken.receipt() == 0) ? refund(state, now, cost) : refund(state, now, cost, taken.receipt());
    }

    /**
     * Takes {@code units} more for a call that was allowed already, into debt by at most
     * {@code maxDebt} units (as {@link PackedTransition#charge}). The default takes nothing.
     * @param state the key's state, {@link #EMPTY} when it has none
     * @param now the time
     * @param units units to take, at least 1
     * @param maxDebt the most units the key may owe after the charge, not negative
     * @return the state after the charge ({@code state} itself when nothing is taken)
     */
    default long[] charge(long[] state, long now, int units, int maxDebt) {
        return state;
    }

    /**
     * Returns how many units the key owes (as {@link PackedTransition#debt}); 0 by default.
     * @param state the key's state, {@link #EMPTY} when it has none
     * @param now the time
     * @return units owed, not negative
     */
    default int debt(long[] state, long now) {
        return 0;
    }
}
