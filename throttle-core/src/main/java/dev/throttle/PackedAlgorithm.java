package dev.throttle;

/**
 * An algorithm whose state per key fits in one {@code long} (its {@link #transition} is a
 * {@link PackedTransition}), so that a policy of it may have several limits, one {@code long} per
 * limit ({@link MultiLimitPolicy}). Its twins in other stores must read its numbers from {@code P}
 * alone, as several limits give each limit's numbers in turn.
 *
 * @param <P> the algorithm's policy type
 */
abstract class PackedAlgorithm<P extends Policy> extends Algorithm<P> {

    PackedAlgorithm(String id, Class<P> type, String... parameters) {
        super(id, type, parameters);
    }

    @Override
    protected abstract PackedTransition transition(P policy, Rates rates);

    @Override
    public final boolean takesSeveralLimits() {
        return true;
    }
}
