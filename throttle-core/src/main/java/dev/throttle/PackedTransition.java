package dev.throttle;

/**
 * An algorithm's {@link Transition} when a key's state fits in one {@code long}. A store keeps the
 * state, commits it atomically (the memory store by compare-and-set) and calls these methods with
 * the state it read; they are pure functions of their arguments (the policy's numbers aside), may
 * run more than once per decision under contention, and must not allocate anything but the
 * {@link Decision} they return. The Lua twin of each transition decides alike.
 *
 * <p>Packing: most algorithms keep a count and a time per key. {@link #pack} stores the time's low
 * 40 bits (milliseconds modulo 2^40, about 35 years) and the count in the next 23 bits; the sign
 * bit stays clear, so {@link #EMPTY} and {@link #REJECTED} are never packed states. A transition may
 * mark states of its own with the sign bit over a count of at least 1 (the fixed window marks a
 * window whose next one holds reservations), which keeps them apart from those two. {@link #time}
 * reads the time back as the one nearest to now with those low bits, so any time within 2^39 ms
 * (about 17 years) of now is read exactly, however old the store is: the 40 bits are never measured
 * from the store's creation, so they cannot run out while it lives (a JVM started with a clock years
 * behind, corrected later, keeps every limit). Times further than that from now never matter: every
 * policy's state is neutral within ten years.
 */
public non-sealed interface PackedTransition extends Transition {

    /** The largest count a packed state holds. */
    int MAX_COUNT = (1 << 23) - 1;

    /** The state of a key never used, or reset. Below every state that {@link #pack} makes. */
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
     * Decides a call that may wait up to {@code maxWaitMillis} for its turn: a reservation. Allowed
     * now, it is {@link #acquire}'s state; allowed for a turn within {@code maxWaitMillis}, the state
     * with the call's units already taken for that turn (so that every later call is decided after
     * it), which {@link #reserved} tells the wait of; otherwise {@link #REJECTED}, writing nothing,
     * and {@link #rejected} tells when the same call could pass. With {@code maxWaitMillis} 0 it must
     * be exactly {@link #acquire}. The default is for algorithms that cannot reserve a later turn
     * (see {@link Algorithm#takesWait()}): it decides as {@link #acquire}, never waiting.
     * @param state the key's state, {@link #EMPTY} when it has none
     * @param now the time
     * @param cost units the call takes, between 1 and the policy's maximum cost
     * @param maxWaitMillis the longest the call may wait for its turn, not negative
     * @return the state after reserving the call's turn, or {@link #REJECTED}
     */
    default long reserve(long state, long now, int cost, long maxWaitMillis) {
        return acquire(state, now, cost);
    }

    /**
     * Returns what a call that {@link #reserve} let in is told: {@link #allowed}'s decision, with the
     * time until its turn when it must wait ({@link Decision#waitMillis()}). The default is for
     * algorithms that cannot reserve: {@link #allowed}.
     * @param next the state {@link #reserve} returned, now committed
     * @param now the time
     * @return the decision
     */
    default Decision reserved(long next, long now) {
        return allowed(next, now);
    }

    /**
     * Takes {@code units} more for a call that was allowed already and turned out to cost more than
     * it was charged (a cost known only after the call): never refused. What is left may go below
     * nothing, into debt, which later calls pay back (they are refused until refills have brought
     * what is left back to their cost), but by at most {@code maxDebt} units: the units beyond that
     * are not taken. The default is for algorithms that cannot carry a debt (see
     * {@link Algorithm#takesActualCost()}): it takes nothing.
     * @param state the key's state, {@link #EMPTY} when it has none
     * @param now the time
     * @param units units to take, at least 1
     * @param maxDebt the most units the key may owe after the charge, not negative
     * @return the state after the charge ({@code state} itself when nothing is taken)
     */
    default long charge(long state, long now, int units, int maxDebt) {
        return state;
    }

    /**
     * Returns how many units the key owes: taken beyond what the policy holds, by {@link #charge}
     * (or by reservations of later turns), to be paid back before a call passes. 0 for algorithms
     * that cannot carry a debt.
     * @param state the key's state, {@link #EMPTY} when it has none
     * @param now the time
     * @return units owed, not negative
     */
    default int debt(long state, long now) {
        return 0;
    }

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
     * {@link Limiter#refund(String, int)}).
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

    /**
     * Packs a count and a time into a state.
     * @param count between 0 and {@link #MAX_COUNT}
     * @param timeMillis the time; its low 40 bits are kept
     * @return the state
     */
    static long pack(long count, long timeMillis) {
        return (count << PackedBits.TIME_BITS) | (timeMillis & PackedBits.TIME_MASK);
    }

    /**
     * Returns the time of a packed state: the time nearest to {@code now} whose low 40 bits the state
     * holds, exact for any time within 2^39 ms (about 17 years) of now.
     * @param state a state that {@link #pack} made
     * @param now the time the state is read at
     * @return the time in milliseconds
     */
    static long time(long state, long now) {
        long ahead = ((state & PackedBits.TIME_MASK) - now) & PackedBits.TIME_MASK;
        return now + ((ahead >= PackedBits.HALF_RANGE) ? ahead - (1L << PackedBits.TIME_BITS) : ahead);
    }

    /**
     * Returns the count of a packed state.
     * @param state a state that {@link #pack} made
     * @return the count
     */
    static int count(long state) {
        return (int) (state >>> PackedBits.TIME_BITS);
    }
}
