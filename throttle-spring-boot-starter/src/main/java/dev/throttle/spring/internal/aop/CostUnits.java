package dev.throttle.spring.internal.aop;

import org.jspecify.annotations.Nullable;

/**
 * What the value of a cost expression is worth in units, the same for
 * {@code @Throttled(costExpression)} and a URL rule's {@code cost}: a number, rounded down and
 * clamped to at least 1 (at most {@link Integer#MAX_VALUE}); anything else (null, NaN, another
 * type) is no cost, and the caller falls back to its default and says why.
 */
public final class CostUnits {

	/** What {@link #of} returns for a value that is no cost. */
	public static final int NONE = 0;

	private CostUnits() {
	}

	/**
	 * The units a value is worth.
	 * @param value what the expression gave
	 * @return at least 1, or {@link #NONE} when the value is no cost
	 */
	public static int of(@Nullable Object value) {
		if (value instanceof Number number) {
			double units = number.doubleValue();
			if (!Double.isNaN(units)) {
				return (int) Math.max(1, Math.min(units, Integer.MAX_VALUE));
			}
		}
		return NONE;
	}

	/**
	 * Why a value is no cost, to follow the expression in a message.
	 * @param value a value for which {@link #of} returned {@link #NONE}
	 * @return such as {@code was null}
	 */
	public static String whyNone(@Nullable Object value) {
		if (value == null) {
			return "was null";
		}
		return (value instanceof Number) ? "was not a number"
				: "was a " + value.getClass().getSimpleName() + ", not a number";
	}

}
