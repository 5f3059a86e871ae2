package dev.throttle;

import dev.throttle.memory.MemoryCells;
import dev.throttle.memory.PackedTransition;

/**
 * An algorithm whose state per key fits in one {@code long}: the memory store binds its
 * {@link #transition} over one packed cell per key, and a policy of it may have several limits,
 * one {@code long} per limit ({@link MultiLimitPolicy}). Its script must read its numbers from
 * {@code P} alone, as several limits give each limit's numbers in turn.
 *
 * @param <P> the algorithm's policy type
 */
abstract class PackedAlgorithm<P extends Policy> extends Algorithm<P> {

	PackedAlgorithm(String id, Class<P> type, String... parameters) {
		super(id, type, parameters);
	}

	@Override
	protected abstract PackedTransition transition(P policy, MemoryCells cells);

	@Override
	protected final Limiter bind(P policy, MemoryCells cells) {
		return cells.packed(transition(policy, cells));
	}

	@Override
	public final boolean takesSeveralLimits() {
		return true;
	}

}
