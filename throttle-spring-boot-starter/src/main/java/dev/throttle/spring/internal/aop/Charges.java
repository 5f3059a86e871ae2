package dev.throttle.spring.internal.aop;

import java.util.List;
import java.util.concurrent.CompletionStage;

import org.jspecify.annotations.Nullable;

import dev.throttle.BoundPolicy;
import dev.throttle.Policy;
import dev.throttle.ThrottledException;

/**
 * The steps of {@link ThrottleFlow} for entry points other than the method advice (the URL-rule
 * filters): a charge is one policy, bound to the store, with its cost and its settlement; a call
 * of several charges takes from each in order, gives back what the earlier ones took when a later
 * one refuses, and settles a success by each policy's reset-on-success / count. One
 * implementation of those steps, so that every entry point charges the same way.
 */
public final class Charges {

	private Charges() {
	}

	/**
	 * One policy as a call charges it.
	 */
	public static final class Charge {

		final Throttle throttle;

		private Charge(Throttle throttle) {
			this.throttle = throttle;
		}

		/**
		 * Returns the policy.
		 * @return the policy
		 */
		public Policy policy() {
			return this.throttle.policy();
		}

		/**
		 * Returns what one call costs.
		 * @return the units per call
		 */
		public int cost() {
			return this.throttle.cost();
		}

		/**
		 * Whether a successful call changes state (reset-on-success or count: failures).
		 * @return whether a success must be settled
		 */
		public boolean settlesOnSuccess() {
			return this.throttle.settlesOnSuccess();
		}

		/**
		 * The same charge for one call under a plan's numbers and with another cost (the plan and
		 * cost of a URL rule, chosen per request).
		 * @param plan the plan's name; null, blank or not configured: the base numbers
		 * @param cost units this call takes
		 * @return the charge, or this one when nothing differs
		 */
		public Charge choose(@Nullable String plan, int cost) {
			Throttle base = this.throttle;
			BoundPolicy bound = base.bound().plan(plan);
			if (bound == base.bound() && cost == base.cost()) {
				return this;
			}
			return new Charge(new Throttle(bound, cost, base.resetOnSuccess(), base.refundOnSuccess(), base.mode()));
		}

	}

	/**
	 * Makes a charge.
	 * @param bound the policy, bound to the store
	 * @param cost units per call
	 * @param usage how a successful call is settled
	 * @return the charge
	 */
	public static Charge of(BoundPolicy bound, int cost, ThrottledMethods.PolicyUsage usage) {
		return new Charge(new Throttle(bound, cost, usage.resetOnSuccess(), usage.refundOnSuccess()));
	}

	/**
	 * Takes from every charge in order, blocking if the store does; tells {@code request} the
	 * decisions (its headers) or the refusal.
	 * @param charges the charges
	 * @param keys their keys, in the same order
	 * @param request the request
	 * @return the decisions, in order
	 * @throws ThrottledException when one refuses (what the earlier ones took is given back)
	 */
	public static List<PolicyDecision> acquire(List<Charge> charges, String[] keys, ThrottleRequestContext request) {
		return ThrottleFlow.acquire(throttles(charges), keys, request);
	}

	/**
	 * Like {@link #acquire}, without blocking.
	 * @param charges the charges
	 * @param keys their keys, in the same order
	 * @param request the request
	 * @return the decisions; fails with a {@link ThrottledException} when one refuses
	 */
	public static CompletionStage<List<PolicyDecision>> acquireAsync(List<Charge> charges, String[] keys,
			ThrottleRequestContext request) {
		return ThrottleFlow.acquireAsync(throttles(charges), keys, request);
	}

	/**
	 * Settles a call that succeeded, blocking if the store does; never throws.
	 * @param charges the charges
	 * @param keys their keys
	 * @param decisions what {@link #acquire} returned
	 * @param request the request (told the reset states)
	 */
	public static void settle(List<Charge> charges, String[] keys, List<PolicyDecision> decisions,
			ThrottleRequestContext request) {
		ThrottleFlow.settle(throttles(charges), keys, decisions, request);
	}

	/**
	 * Like {@link #settle}, without blocking; the stage never fails.
	 * @param charges the charges
	 * @param keys their keys
	 * @param decisions what {@link #acquireAsync} completed with
	 * @param request the request (told the reset states)
	 * @return completes when every settlement is done
	 */
	public static CompletionStage<Void> settleAsync(List<Charge> charges, String[] keys, List<PolicyDecision> decisions,
			ThrottleRequestContext request) {
		return ThrottleFlow.settleAsync(throttles(charges), keys, decisions, request);
	}

	private static List<Throttle> throttles(List<Charge> charges) {
		if (charges.size() == 1) {
			return List.of(charges.get(0).throttle);
		}
		return charges.stream().map((charge) -> charge.throttle).toList();
	}

}
