package dev.throttle;

import java.util.Arrays;

/**
 * The numbers one policy name's packed states were written under, each by a small id, so that a
 * state stays meaningful when the policy is bound again under other numbers (a plan, a change at
 * run time): GCRA keeps its emission interval's id beside its score, and converts a score written
 * under another interval. A store that runs the {@link Transition Java transitions} keeps one per
 * policy name for as long as it keeps that name's states, and hands it to every binding of the
 * name ({@link Algorithm#transitionOf(Policy, Rates)}).
 *
 * <p>Thread-safe; ids are given when a policy is bound, never per decision, and read without a lock.
 */
public final class Rates {

    /** The most numbers one policy name tells apart. */
    public static final int MAX = 4096;

    private final String policyName;

    /** The numbers given ids, by id: replaced, never changed, so reads need no lock. */
    private volatile long[] rates = new long[0];

    /**
     * Creates the table of one policy name.
     * @param policyName the name, for the message when the table is full
     */
    public Rates(String policyName) {
        this.policyName = policyName;
    }

    /**
     * Returns the id of a number, the same for equal numbers across every binding of the policy name.
     * @param rate the number
     * @return its id, below {@link #MAX}
     * @throws IllegalStateException when the policy name has had {@link #MAX} distinct numbers
     */
    public synchronized int id(long rate) {
        long[] known = this.rates;
        for (int id = 0; id < known.length; id++) {
            if (known[id] == rate) {
                return id;
            }
        }
        if (known.length >= MAX) {
            throw new IllegalStateException("policy '" + this.policyName + "' has been bound with " + MAX
                    + " distinct rates, the most its state can tell apart");
        }
        long[] more = Arrays.copyOf(known, known.length + 1);
        more[known.length] = rate;
        this.rates = more;
        return known.length;
    }

    /**
     * Returns the number that {@link #id} gave an id.
     * @param id an id it returned
     * @return the number
     */
    public long rate(int id) {
        return this.rates[id];
    }
}
