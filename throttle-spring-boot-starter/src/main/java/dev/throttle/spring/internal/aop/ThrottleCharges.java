package dev.throttle.spring.internal.aop;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

import org.jspecify.annotations.Nullable;

import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.spring.internal.aop.ThrottledMethods.PolicyUsage;

/**
 * The acquire, give-back and settle flow of {@link ThrottleFlow} for callers that are not an
 * annotated method (a Spring Security login): some policies, each charged one unit per call, in
 * order, and settled on success by each policy's own reset-on-success and count settings.
 * Immutable and thread-safe.
 */
public final class ThrottleCharges {

	private final List<Throttle> throttles;

	private ThrottleCharges(List<Throttle> throttles) {
		this.throttles = throttles;
	}

	/**
	 * Binds policies to the throttler's store, once.
	 * @param throttler the throttler that knows the policies
	 * @param policies the policy names, in charging order (each configured in the throttler)
	 * @param usage how each policy settles a success, by name
	 * @return the charges
	 */
	public static ThrottleCharges of(Throttler throttler, List<String> policies, Function<String, PolicyUsage> usage) {
		return of(throttler, policies, usage, null);
	}

	/**
	 * Binds policies to the throttler's store, once, each in its mode (a policy in shadow mode
	 * records what it would refuse and refuses nothing).
	 * @param throttler the throttler that knows the policies
	 * @param policies the policy names, in charging order (each configured in the throttler)
	 * @param usage how each policy settles a success, by name
	 * @param modes which policies are in shadow mode (null: none)
	 * @return the charges
	 */
	public static ThrottleCharges of(Throttler throttler, List<String> policies, Function<String, PolicyUsage> usage,
			@Nullable PolicyModes modes) {
		List<Throttle> throttles = new ArrayList<>(policies.size());
		for (String name : policies) {
			PolicyUsage settles = usage.apply(name);
			settles = (settles != null) ? settles : PolicyUsage.DEFAULT;
			throttles.add(new Throttle(throttler.bound(name), 1, settles.resetOnSuccess(), settles.refundOnSuccess(),
					(modes != null) ? modes.of(name) : Throttle.ENFORCED));
		}
		return new ThrottleCharges(List.copyOf(throttles));
	}

	/**
	 * Returns how many policies a call is charged by.
	 * @return the number of policies
	 */
	public int size() {
		return this.throttles.size();
	}

	/**
	 * Charges a call by every policy, in order, blocking if the store does; tells {@code request}
	 * the decisions (the RateLimit headers of an allowed call).
	 * @param keys the keys, one per policy in order
	 * @param request the request the call runs in
	 * @return what the call took, to settle when it succeeds
	 * @throws ThrottledException when a policy refuses (what the earlier ones took is given back)
	 */
	public Charge acquire(String[] keys, ThrottleRequestContext request) {
		if (keys.length != this.throttles.size()) {
			throw new IllegalArgumentException("Expected " + this.throttles.size() + " keys, got " + keys.length);
		}
		List<PolicyDecision> decisions = ThrottleFlow.acquire(this.throttles, keys, request);
		return new Charge(this.throttles, keys.clone(), decisions, request);
	}

	/**
	 * What one call took: settled once when the call succeeds; a call that fails keeps it.
	 */
	public static final class Charge {

		private final List<Throttle> throttles;

		private final String[] keys;

		private final List<PolicyDecision> decisions;

		private final ThrottleRequestContext request;

		private Charge(List<Throttle> throttles, String[] keys, List<PolicyDecision> decisions,
				ThrottleRequestContext request) {
			this.throttles = throttles;
			this.keys = keys;
			this.decisions = decisions;
			this.request = request;
		}

		/**
		 * Settles a success: resets each reset-on-success policy's key (telling the request the
		 * reset state) and gives back what each count-failures policy took. Never throws.
		 */
		public void succeeded() {
			ThrottleFlow.settle(this.throttles, this.keys, this.decisions, this.request);
		}

	}

}
