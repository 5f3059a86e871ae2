package dev.throttle;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;

import dev.throttle.memory.ArrayTransition;
import dev.throttle.memory.MemoryCells;

/**
 * Sliding log with a growing delay (metabase/throttle's {@code check}): the attempts of the last
 * {@code ttl} are kept; with {@code c} of them, {@code over = c + 1 - threshold}; when
 * {@code over > 0} the call must come at least {@code initialDelay * over^delayExponent} after the
 * most recent attempt. A refused call is not recorded.
 *
 * <p>Delays are rounded to whole milliseconds once, here ({@link #delaysMillis()}), and both stores
 * use that table, so floating point never decides differently in Java and Lua.
 *
 * @param name the policy's name
 * @param threshold attempts allowed within {@code ttl} before delays apply
 * @param ttl how long an attempt is remembered
 * @param initialDelay the delay once the threshold is passed
 * @param delayExponent how fast the delay grows with each attempt over the threshold
 */
public record SlidingLogPolicy(String name, int threshold, Duration ttl, Duration initialDelay, double delayExponent)
		implements Policy {

	/** Default {@code threshold}. */
	public static final int DEFAULT_THRESHOLD = 10;

	/** Default {@code ttl}. */
	public static final Duration DEFAULT_TTL = Duration.ofHours(1);

	/** Default {@code initial-delay}. */
	public static final Duration DEFAULT_INITIAL_DELAY = Duration.ofSeconds(15);

	/** Default {@code delay-exponent}. */
	public static final double DEFAULT_DELAY_EXPONENT = 1.5;

	/** Most attempts one key's log may need to hold; a policy that needs more is refused. */
	public static final int MAX_ENTRIES = 1000;

	/** The {@code sliding-log} algorithm. */
	public static final Algorithm<SlidingLogPolicy> ALGORITHM = new Descriptor();

	public SlidingLogPolicy {
		Checks.name(name);
		Checks.quantity(name, "threshold", threshold);
		Checks.duration(name, "ttl", ttl);
		Checks.duration(name, "initial-delay", initialDelay);
		if (!(delayExponent >= 0 && delayExponent <= 10)) {
			throw new InvalidPolicyException(name, "delay-exponent", "must be between 0 and 10, was " + delayExponent);
		}
		if (threshold > MAX_ENTRIES) {
			throw new InvalidPolicyException(name, "threshold", "must be at most " + MAX_ENTRIES + ", was " + threshold);
		}
		int mostDelays = MAX_ENTRIES + 1 - threshold;
		if (delayCount(ttl, initialDelay, delayExponent, mostDelays) > mostDelays) {
			throw new InvalidPolicyException(name, "initial-delay", "is too short: the log would have to keep more than "
					+ MAX_ENTRIES + " attempts per key within ttl " + Checks.format(ttl)
					+ "; raise initial-delay or delay-exponent, or lower ttl or threshold");
		}
	}

	/**
	 * A policy with metabase's defaults: threshold 10, ttl 1h, initial delay 15s, exponent 1.5.
	 * @param name the policy's name
	 * @return the policy
	 */
	public static SlidingLogPolicy withDefaults(String name) {
		return new SlidingLogPolicy(name, DEFAULT_THRESHOLD, DEFAULT_TTL, DEFAULT_INITIAL_DELAY, DEFAULT_DELAY_EXPONENT);
	}

	private static long delay(long initialDelayMillis, double exponent, int over) {
		double millis = initialDelayMillis * Math.pow(over, exponent);
		return (long) Math.min(Math.round(millis), Checks.MAX_MILLIS);
	}

	/** How many delays it takes to wait out {@code ttl}; {@code most + 1} when it takes more than {@code most}. */
	private static int delayCount(Duration ttl, Duration initialDelay, double exponent, int most) {
		int count = 0;
		long waited = 0;
		while (waited < ttl.toMillis() && count <= most) {
			count++;
			waited += delay(initialDelay.toMillis(), exponent, count);
		}
		return count;
	}

	/**
	 * Returns the required delay after the most recent attempt, for {@code over} = 1, 2, ...
	 * up to the largest {@code over} a key's log can reach; element {@code i} is for
	 * {@code over = i + 1}. Computed on each call: stores read it once when they bind the policy.
	 * @return delays in milliseconds, rounded to the nearest millisecond
	 */
	long[] delaysMillis() {
		int count = delayCount(this.ttl, this.initialDelay, this.delayExponent, MAX_ENTRIES);
		long[] delays = new long[count];
		for (int i = 0; i < count; i++) {
			delays[i] = delay(this.initialDelay.toMillis(), this.delayExponent, i + 1);
		}
		return delays;
	}

	/**
	 * Returns the most attempts a key's log ever needs to hold to decide: {@code threshold} free
	 * attempts plus those the delays let in within one {@code ttl}.
	 * @return the bound on the log's length
	 */
	int maxEntries() {
		return this.threshold + delaysMillis().length - 1;
	}

	@Override
	public Algorithm<SlidingLogPolicy> algorithm() {
		return ALGORITHM;
	}

	@Override
	public int quota() {
		return this.threshold;
	}

	@Override
	public Duration window() {
		return this.ttl;
	}

	/**
	 * Always 1: the log counts attempts.
	 */
	@Override
	public int maxCost() {
		return 1;
	}

	@Override
	public Duration idleExpiry() {
		return this.ttl;
	}

	/**
	 * The {@code sliding-log} algorithm; its Lua twin is {@code sliding_log.lua}.
	 */
	public static final class Descriptor extends Algorithm<SlidingLogPolicy> {

		/** Creates the algorithm: use {@link SlidingLogPolicy#ALGORITHM}. */
		public Descriptor() {
			super("sliding-log", SlidingLogPolicy.class, "threshold", "ttl", "initial-delay", "delay-exponent");
		}

		@Override
		protected SlidingLogPolicy build(String name, Settings settings) {
			return new SlidingLogPolicy(name, settings.get("threshold", Integer.class, DEFAULT_THRESHOLD),
					settings.get("ttl", Duration.class, DEFAULT_TTL),
					settings.get("initial-delay", Duration.class, DEFAULT_INITIAL_DELAY),
					settings.get("delay-exponent", Double.class, DEFAULT_DELAY_EXPONENT));
		}

		@Override
		protected List<Object> values(SlidingLogPolicy policy) {
			return List.of(policy.threshold(), policy.ttl(), policy.initialDelay(), policy.delayExponent());
		}

		@Override
		protected long[] numbers(SlidingLogPolicy policy) {
			long[] delays = policy.delaysMillis();
			long[] numbers = new long[3 + delays.length];
			numbers[0] = policy.threshold();
			numbers[1] = policy.ttl().toMillis();
			numbers[2] = policy.maxEntries();
			System.arraycopy(delays, 0, numbers, 3, delays.length);
			return numbers;
		}

		@Override
		protected Limiter bind(SlidingLogPolicy policy, MemoryCells cells) {
			return cells.array(new Transition(policy));
		}

	}

	/**
	 * Over the times of a key's recent allowed attempts, oldest first.
	 *
	 * <p>An attempt older than {@code ttl} ({@code now - t >= ttl}) no longer counts. With {@code c}
	 * live attempts, {@code over = c + 1 - threshold}; when {@code over > 0} the call must come at
	 * least {@code delays[over - 1]} after the most recent attempt. A refused call is not recorded.
	 * The log never holds more than {@link SlidingLogPolicy#maxEntries()} times: that many fit in one
	 * ttl, so anything older could not count.
	 *
	 * <p>The times ascend: an attempt is recorded at {@code now}, or at the most recent time when
	 * {@code now} is before it (the clock stepped back), which keeps the order and counts the attempt
	 * no shorter. So the live attempts are the log's tail.
	 *
	 * <p>The wait (a refusal's retry-after, and the next unit once no attempt is left before delays
	 * apply) is exact: the earliest time at which the delay after the newest attempt has passed
	 * <em>with the attempts that still count then</em>, since an old attempt that ages out first
	 * lowers {@code over}. While attempts are left before delays apply, the next one comes when the
	 * oldest live attempt ages out.
	 *
	 * <p>Receipt: the attempt's recorded time. A refund removes an attempt with that time while it
	 * still counts (attempts with one time are alike), and nothing once it has aged out.
	 */
	static final class Transition implements ArrayTransition {

		private final int threshold;

		private final long ttlMillis;

		private final long[] delays;

		private final int maxEntries;

		Transition(SlidingLogPolicy policy) {
			this.threshold = policy.threshold();
			this.ttlMillis = policy.ttl().toMillis();
			this.delays = policy.delaysMillis();
			this.maxEntries = policy.maxEntries();
		}

		/**
		 * How many of the log's times still count: its tail after the last one that is ttl old. The
		 * oldest is looked at first (in a log an abuser keeps full every time counts, and one probe
		 * decides), then a binary search between the oldest, which no longer counts, and the newest.
		 */
		private int live(long[] log, long now) {
			int n = log.length;
			if (n == 0 || now - log[n - 1] >= this.ttlMillis) {
				return 0;
			}
			if (now - log[0] < this.ttlMillis) {
				return n;
			}
			int lo = 1;
			int hi = n - 1;
			while (lo < hi) {
				int mid = (lo + hi) >>> 1;
				if (now - log[mid] < this.ttlMillis) {
					hi = mid;
				}
				else {
					lo = mid + 1;
				}
			}
			return n - lo;
		}

		/** The delay after the newest attempt with {@code over} attempts past the threshold, over > 0. */
		private long delay(int over) {
			return this.delays[Math.min(over, this.delays.length) - 1];
		}

		/**
		 * How long the next attempt must still wait, 0 when it may pass now: the earliest time at which
		 * the delay after the newest attempt has passed, counting only the attempts still live then.
		 * The {@code k}-th oldest live attempt ages out at its time plus ttl, lowering {@code over} by
		 * one; the search stops at the first such time past the best found.
		 */
		private long wait(long[] log, int live, long now) {
			int over = live + 1 - this.threshold;
			if (over <= 0) {
				return 0;
			}
			long newest = log[log.length - 1];
			long best = newest + delay(over);
			int oldestLive = log.length - live;
			for (int k = 1; k <= over; k++) {
				long agedOut = log[oldestLive + k - 1] + this.ttlMillis;
				if (agedOut >= best) {
					break;
				}
				best = (over - k <= 0) ? agedOut : Math.max(agedOut, newest + delay(over - k));
			}
			return Math.max(0, best - now);
		}

		/** Until one attempt more than the live ones would leave before delays apply, or may pass. */
		private long untilNextUnit(long[] log, int live, long now) {
			if (live == 0) {
				return 0;
			}
			if (live < this.threshold) {
				return log[log.length - live] + this.ttlMillis - now;
			}
			return wait(log, live, now);
		}

		@Override
		public long[] acquire(long[] log, long now, int cost) {
			int live = live(log, now);
			if (wait(log, live, now) > 0) {
				return null;
			}
			int kept = Math.min(live, this.maxEntries - 1);
			long[] next = new long[kept + 1];
			System.arraycopy(log, log.length - kept, next, 0, kept);
			next[kept] = (log.length > 0) ? Math.max(now, log[log.length - 1]) : now;
			return next;
		}

		@Override
		public Decision allowed(long[] next, long now) {
			long at = next[next.length - 1];
			return Decision.allow(this.threshold, Math.max(0, this.threshold - next.length), at + this.ttlMillis - now,
					untilNextUnit(next, next.length, now), Math.max(1, at));
		}

		@Override
		public Decision rejected(long[] log, long now, int cost) {
			long wait = wait(log, live(log, now), now);
			return Decision.reject(this.threshold, 0, wait, log[log.length - 1] + this.ttlMillis - now);
		}

		@Override
		public Decision peek(long[] log, long now) {
			int live = live(log, now);
			if (live == 0) {
				return Decision.allow(this.threshold, this.threshold, 0);
			}
			long untilNeutral = log[log.length - 1] + this.ttlMillis - now;
			long wait = wait(log, live, now);
			if (wait > 0) {
				return Decision.reject(this.threshold, 0, wait, untilNeutral);
			}
			return Decision.allow(this.threshold, Math.max(0, this.threshold - live), untilNeutral,
					untilNextUnit(log, live, now), 0);
		}

		@Override
		public long[] refund(long[] log, long now, int cost) {
			return (log.length == 1) ? EMPTY : Arrays.copyOf(log, log.length - 1);
		}

		@Override
		public long[] refund(long[] log, long now, int cost, long receipt) {
			int live = live(log, now);
			// the newest live attempt with the receipt's time: the times ascend, so search from the end
			for (int i = log.length - 1; i >= log.length - live; i--) {
				if (Math.max(1, log[i]) == receipt) {
					if (log.length == 1) {
						return EMPTY;
					}
					long[] next = new long[log.length - 1];
					System.arraycopy(log, 0, next, 0, i);
					System.arraycopy(log, i + 1, next, i, log.length - 1 - i);
					return next;
				}
				if (log[i] < receipt) {
					break;
				}
			}
			return log;
		}

	}

}
