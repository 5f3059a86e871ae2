package dev.throttle;

import java.time.Duration;
import java.util.List;
import java.util.Locale;

import dev.throttle.memory.MemoryCells;
import dev.throttle.memory.PackedTransition;

/**
 * GCRA: {@code limit} calls per {@code period}, with a burst of {@code limit}, kept as one score
 * per key (the theoretical arrival time, in microseconds). The interval between calls is kept in
 * whole microseconds, so a policy whose {@code period / limit} would be kept more than 1% short
 * (600,000 per second: 1.67 us kept as 1 us, a million per second) is refused when it is built.
 *
 * @param name the policy's name
 * @param limit calls allowed per period (n)
 * @param period the period (T)
 */
public record GcraPolicy(String name, int limit, Duration period) implements Policy {

	/** The {@code gcra} algorithm. */
	public static final Algorithm<GcraPolicy> ALGORITHM = new Descriptor();

	public GcraPolicy {
		Checks.name(name);
		Checks.quantity(name, "limit", limit);
		Checks.duration(name, "period", period);
		long periodMicros = period.toMillis() * 1000;
		long interval = periodMicros / limit;
		if (interval < 1) {
			throw new InvalidPolicyException(name, "limit",
					"must be at most one call per microsecond of period, was " + limit + " per "
							+ Checks.format(period));
		}
		// both stores keep the interval in whole microseconds, rounded down: the rate they keep,
		// 1/interval, must not run more than 1% above the rate asked for, limit/period
		if (100 * periodMicros > 101L * limit * interval) {
			double exact = (double) periodMicros / limit;
			throw new InvalidPolicyException(name, "limit", String.format(Locale.ROOT,
					"%d per period %s needs a call every %.3f microseconds, which the stores keep in whole"
							+ " microseconds (%d, a rate %.1f%% too high); choose a limit and period whose"
							+ " period/limit is within 1%% of a whole number of microseconds",
					limit, Checks.format(period), exact, interval, (exact / interval - 1) * 100));
		}
	}

	@Override
	public Algorithm<GcraPolicy> algorithm() {
		return ALGORITHM;
	}

	/**
	 * Returns the emission interval T/n in microseconds, rounded down so that a burst of exactly
	 * {@code limit} calls fits.
	 * @return microseconds between calls at the sustained rate
	 */
	long emissionIntervalMicros() {
		return this.period.toMillis() * 1000 / this.limit;
	}

	/**
	 * Returns the burst tolerance: how far ahead of now the score may run, {@code limit} intervals.
	 * Equals the period when the period divides evenly by the limit.
	 * @return microseconds
	 */
	long toleranceMicros() {
		return emissionIntervalMicros() * this.limit;
	}

	@Override
	public int quota() {
		return this.limit;
	}

	@Override
	public Duration window() {
		return this.period;
	}

	@Override
	public int maxCost() {
		return this.limit;
	}

	@Override
	public Duration idleExpiry() {
		return this.period;
	}

	/**
	 * The {@code gcra} algorithm; its Lua twin is {@code gcra.lua}.
	 */
	public static final class Descriptor extends Algorithm<GcraPolicy> {

		/** Creates the algorithm: use {@link GcraPolicy#ALGORITHM}. */
		public Descriptor() {
			super("gcra", GcraPolicy.class, "limit", "period");
		}

		@Override
		protected GcraPolicy build(String name, Settings settings) {
			return new GcraPolicy(name, settings.required("limit", Integer.class),
					settings.required("period", Duration.class));
		}

		@Override
		protected List<Object> values(GcraPolicy policy) {
			return List.of(policy.limit(), policy.period());
		}

		@Override
		protected long[] numbers(GcraPolicy policy) {
			return new long[] { policy.limit(), policy.emissionIntervalMicros(), policy.toleranceMicros() };
		}

		@Override
		protected Limiter bind(GcraPolicy policy, MemoryCells cells) {
			return cells.packed(new Transition(policy));
		}

	}

	/**
	 * Over one long: the theoretical arrival time (TAT) in microseconds since the epoch.
	 *
	 * <p>The cooldown document's rule, with emission interval {@code I = T/n} (microseconds, rounded
	 * down) and tolerance {@code n * I} (equal to T when n divides T): the trial score is
	 * {@code max(TAT, now) + cost * I}; the call passes when the trial score is at most
	 * {@code now + n * I}, and the trial score is stored; otherwise nothing is written and the caller
	 * may retry after {@code trial - n * I - now}. Microseconds keep rates such as 3 per second exact
	 * to a microsecond instead of rounding them to whole milliseconds. A TAT ahead of now is the
	 * algorithm's ordinary state, so a clock that stepped back needs no care of its own.
	 * {@link #EMPTY}, the smallest long, is a TAT long past. With {@code r} whole intervals left, the
	 * next unit comes once the score is {@code (r + 1) * I} within the tolerance.
	 *
	 * <p>Receipt: the TAT the call stored. The call took the span {@code [receipt - cost * I, receipt]}
	 * of the score; a refund takes back what of that span is still ahead of now and not beyond the
	 * current TAT, so a refund after the span went by gives back nothing, and one of a call whose
	 * span is half gone gives back half.
	 */
	static final class Transition implements PackedTransition {

		private final int limit;

		/** The emission interval, in microseconds. */
		private final long interval;

		/** The tolerance, in microseconds. */
		private final long tolerance;

		Transition(GcraPolicy policy) {
			this.limit = policy.limit();
			this.interval = policy.emissionIntervalMicros();
			this.tolerance = policy.toleranceMicros();
		}

		@Override
		public long acquire(long state, long now, int cost) {
			long nowMicros = now * 1000;
			long trial = Math.max(state, nowMicros) + cost * this.interval;
			return (trial - nowMicros > this.tolerance) ? REJECTED : trial;
		}

		@Override
		public Decision allowed(long next, long now) {
			long ahead = next - now * 1000;
			return Decision.allow(this.limit, remaining(ahead), ceilDiv(ahead, 1000), untilNextUnit(ahead),
					Math.max(1, next));
		}

		@Override
		public Decision rejected(long state, long now, int cost) {
			long nowMicros = now * 1000;
			long ahead = Math.max(state, nowMicros) - nowMicros;
			long retryMicros = ahead + cost * this.interval - this.tolerance;
			return Decision.reject(this.limit, remaining(ahead), ceilDiv(retryMicros, 1000), ceilDiv(ahead, 1000));
		}

		@Override
		public Decision peek(long state, long now) {
			long nowMicros = now * 1000;
			long ahead = Math.max(state, nowMicros) - nowMicros;
			if (ahead + this.interval <= this.tolerance) {
				return Decision.allow(this.limit, remaining(ahead), ceilDiv(ahead, 1000), untilNextUnit(ahead), 0);
			}
			return rejected(state, now, 1);
		}

		/** Whole intervals left within the tolerance; none when the score runs beyond it. */
		private int remaining(long aheadMicros) {
			return (int) Math.max(0, (this.tolerance - aheadMicros) / this.interval);
		}

		/** Milliseconds until one interval more than {@link #remaining} fits; 0 when nothing is in use. */
		private long untilNextUnit(long aheadMicros) {
			int remaining = remaining(aheadMicros);
			if (remaining >= this.limit) {
				return 0;
			}
			return ceilDiv(aheadMicros + (remaining + 1) * this.interval - this.tolerance, 1000);
		}

		@Override
		public long refund(long state, long now, int cost) {
			long tat = state - cost * this.interval;
			return (tat <= now * 1000) ? EMPTY : tat;
		}

		@Override
		public long refund(long state, long now, int cost, long receipt) {
			long nowMicros = now * 1000;
			long ahead = Math.min(receipt, state) - Math.max(receipt - cost * this.interval, nowMicros);
			if (ahead <= 0) {
				return state;
			}
			long tat = state - ahead;
			return (tat <= nowMicros) ? EMPTY : tat;
		}

		private static long ceilDiv(long dividend, long divisor) {
			return (dividend + divisor - 1) / divisor;
		}

	}

}
