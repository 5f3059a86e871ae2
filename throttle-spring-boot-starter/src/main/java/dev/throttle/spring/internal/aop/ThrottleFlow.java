package dev.throttle.spring.internal.aop;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import dev.throttle.Decision;
import dev.throttle.ThrottledException;

/**
 * The steps of every throttled call, written once for the blocking and the non-blocking path:
 * <ol>
 * <li>acquire: take from each throttle in order; when one refuses (or fails), give back what the
 * earlier ones took (each by its own decision's receipt) and refuse the call with a
 * {@link ThrottledException};</li>
 * <li>the caller runs the call (a method, later a filter chain) and judges its outcome;</li>
 * <li>settle a success: reset the key (reset-on-success), and tell the request the reset state, or
 * give back exactly what the call took (count: failures), by its decision's receipt.</li>
 * </ol>
 * One error policy: giving back and settling never turn a call into an error (the call was
 * refused, or it ran and succeeded: that stands); a failure is logged once, at WARN, naming the
 * policy and never the key (an e-mail or an IP address does not belong in a log).
 *
 * <p>Stateless: a call's state is its throttles, its keys and its decisions, passed in, so that
 * callers outside a method invocation can use it too.
 */
final class ThrottleFlow {

	private static final Log logger = LogFactory.getLog(ThrottleFlow.class);

	private ThrottleFlow() {
	}

	/**
	 * Takes from every throttle, blocking if the store does; tells {@code request} the decisions.
	 * @param throttles the call's throttles
	 * @param keys their keys, in the same order
	 * @param request the request the call runs in
	 * @return the decisions, in order
	 * @throws ThrottledException when a throttle refuses (what the earlier ones took is given back)
	 */
	static List<PolicyDecision> acquire(List<Throttle> throttles, String[] keys, ThrottleRequestContext request) {
		List<PolicyDecision> decisions = new ArrayList<>(throttles.size());
		for (int i = 0; i < throttles.size(); i++) {
			Throttle throttle = throttles.get(i);
			Decision decision;
			try {
				decision = throttle.bound().tryAcquire(keys[i], throttle.cost());
			}
			catch (RuntimeException | Error ex) {
				giveBack(throttles, keys, decisions);
				throw ex;
			}
			if (!decision.allowed() && !throttle.shadow()) {
				giveBack(throttles, keys, decisions);
				request.refused(new PolicyDecision(throttle.policy(), decision));
				throw new ThrottledException(throttle.policy(), decision);
			}
			decisions.add(new PolicyDecision(throttle.policy(), decision));
		}
		request.allowed(enforced(throttles, decisions));
		return decisions;
	}

	/**
	 * Like {@link #acquire}, without blocking: every decision through the store's non-blocking API.
	 * @param throttles the call's throttles
	 * @param keys their keys, in the same order
	 * @param request the request the call runs in
	 * @return the decisions, in order; fails with a {@link ThrottledException} when a throttle refuses
	 */
	static CompletionStage<List<PolicyDecision>> acquireAsync(List<Throttle> throttles, String[] keys,
			ThrottleRequestContext request) {
		List<PolicyDecision> decisions = new ArrayList<>(throttles.size());
		return acquireFrom(0, throttles, keys, decisions).handle((ignored, error) -> {
			if (error != null) {
				if (StoreStages.unwrap(error) instanceof ThrottledException refusal) {
					request.refused(new PolicyDecision(refusal.getPolicy(), refusal.getDecision()));
				}
				throw (error instanceof CompletionException completion) ? completion : new CompletionException(error);
			}
			request.allowed(enforced(throttles, decisions));
			return decisions;
		});
	}

	private static CompletionStage<Void> acquireFrom(int index, List<Throttle> throttles, String[] keys,
			List<PolicyDecision> decisions) {
		if (index == throttles.size()) {
			return StoreStages.DONE;
		}
		Throttle throttle = throttles.get(index);
		return StoreStages.start(() -> throttle.bound().tryAcquireAsync(keys[index], throttle.cost()))
			.handle((decision, error) -> {
				if (error != null) {
					return giveBackAsync(throttles, keys, decisions)
						.thenCompose((done) -> StoreStages.<Void>failed(error));
				}
				if (!decision.allowed() && !throttle.shadow()) {
					return giveBackAsync(throttles, keys, decisions).thenCompose(
							(done) -> StoreStages.<Void>failed(new ThrottledException(throttle.policy(), decision)));
				}
				decisions.add(new PolicyDecision(throttle.policy(), decision));
				return acquireFrom(index + 1, throttles, keys, decisions);
			})
			.thenCompose(Function.identity());
	}

	/**
	 * Settles a call that succeeded, blocking if the store does; refunds without the call's receipts.
	 * @param throttles the call's throttles
	 * @param keys their keys, in the same order
	 */
	static void settle(List<Throttle> throttles, String[] keys) {
		settle(throttles, keys, null, ThrottleRequestContext.NONE);
	}

	/**
	 * Settles a call that succeeded, blocking if the store does: a refund gives back exactly what the
	 * call's decision took (its receipt), and a policy reset on success is told to {@code request} as
	 * its reset state, so that the response's headers describe the state after the call settled.
	 * @param throttles the call's throttles
	 * @param keys their keys, in the same order
	 * @param decisions what {@link #acquire} returned, or null (refunds without receipts)
	 * @param request the request the call runs in
	 */
	static void settle(List<Throttle> throttles, String[] keys, List<PolicyDecision> decisions,
			ThrottleRequestContext request) {
		List<PolicyDecision> reset = null;
		for (int i = 0; i < throttles.size(); i++) {
			Throttle throttle = throttles.get(i);
			try {
				if (throttle.resetOnSuccess()) {
					throttle.bound().reset(keys[i]);
					if (!throttle.shadow()) {
						reset = (reset != null) ? reset : new ArrayList<>(1);
						reset.add(throttle.resetState());
					}
				}
				else if (throttle.refundOnSuccess()) {
					if (decisions != null) {
						Decision taken = decisions.get(i).decision();
						if (taken.allowed()) {
							throttle.bound().refund(keys[i], throttle.cost(), taken);
						}
					}
					else {
						throttle.bound().refund(keys[i], throttle.cost());
					}
				}
			}
			catch (RuntimeException ex) {
				settlementFailed(throttle, ex);
			}
		}
		if (reset != null) {
			request.allowed(reset);
		}
	}

	/**
	 * Like {@link #settle(List, String[])}, without blocking; the settlements run side by side.
	 * @param throttles the call's throttles
	 * @param keys their keys, in the same order
	 * @return completes when every settlement is done; never fails
	 */
	static CompletionStage<Void> settleAsync(List<Throttle> throttles, String[] keys) {
		return settleAsync(throttles, keys, null, ThrottleRequestContext.NONE);
	}

	/**
	 * Like {@link #settle(List, String[], List, ThrottleRequestContext)}, without blocking; the
	 * settlements run side by side, and the reset states are told once every settlement is done.
	 * @param throttles the call's throttles
	 * @param keys their keys, in the same order
	 * @param decisions what {@link #acquireAsync} completed with, or null (refunds without receipts)
	 * @param request the request the call runs in
	 * @return completes when every settlement is done; never fails
	 */
	static CompletionStage<Void> settleAsync(List<Throttle> throttles, String[] keys, List<PolicyDecision> decisions,
			ThrottleRequestContext request) {
		CompletionStage<Void> all = StoreStages.DONE;
		// one slot per throttle, each written by its own reset's completion before the whole completes
		PolicyDecision[] reset = new PolicyDecision[throttles.size()];
		for (int i = 0; i < throttles.size(); i++) {
			Throttle throttle = throttles.get(i);
			String key = keys[i];
			int slot = i;
			if (throttle.resetOnSuccess()) {
				CompletionStage<Void> done = StoreStages.start(() -> throttle.bound().resetAsync(key))
					.thenRun(() -> reset[slot] = throttle.shadow() ? null : throttle.resetState());
				all = StoreStages.both(all, logged(done, throttle, true));
			}
			else if (throttle.refundOnSuccess()) {
				Decision taken = (decisions != null) ? decisions.get(i).decision() : null;
				if (taken != null && !taken.allowed()) {
					// a shadow policy's would-be refusal took nothing
					continue;
				}
				CompletionStage<Void> refunded = StoreStages.start(
						() -> (taken != null) ? throttle.bound().refundAsync(key, throttle.cost(), taken)
								: throttle.bound().refundAsync(key, throttle.cost()));
				all = StoreStages.both(all, logged(refunded, throttle, true));
			}
		}
		return all.thenRun(() -> {
			List<PolicyDecision> states = new ArrayList<>(0);
			for (PolicyDecision state : reset) {
				if (state != null) {
					states.add(state);
				}
			}
			if (!states.isEmpty()) {
				request.allowed(states);
			}
		});
	}

	/** The decisions whose policies enforce: a shadow policy sends no headers. No copy when none is in shadow. */
	private static List<PolicyDecision> enforced(List<Throttle> throttles, List<PolicyDecision> decisions) {
		List<PolicyDecision> enforced = decisions;
		for (int i = 0; i < decisions.size(); i++) {
			if (throttles.get(i).shadow()) {
				if (enforced == decisions) {
					enforced = new ArrayList<>(decisions.subList(0, i));
				}
			}
			else if (enforced != decisions) {
				enforced.add(decisions.get(i));
			}
		}
		return enforced;
	}

	private static void giveBack(List<Throttle> throttles, String[] keys, List<PolicyDecision> taken) {
		for (int i = 0; i < taken.size(); i++) {
			Throttle throttle = throttles.get(i);
			if (!taken.get(i).decision().allowed()) {
				continue;
			}
			try {
				throttle.bound().refund(keys[i], throttle.cost(), taken.get(i).decision());
			}
			catch (RuntimeException ex) {
				giveBackFailed(throttle, ex);
			}
		}
	}

	/** Gives back side by side; the returned stage never fails. */
	private static CompletionStage<Void> giveBackAsync(List<Throttle> throttles, String[] keys,
			List<PolicyDecision> taken) {
		CompletionStage<Void> all = StoreStages.DONE;
		for (int i = 0; i < taken.size(); i++) {
			Throttle throttle = throttles.get(i);
			String key = keys[i];
			Decision decision = taken.get(i).decision();
			if (!decision.allowed()) {
				continue;
			}
			CompletionStage<Void> refunded = StoreStages
				.start(() -> throttle.bound().refundAsync(key, throttle.cost(), decision));
			all = StoreStages.both(all, logged(refunded, throttle, false));
		}
		return all;
	}

	private static CompletionStage<Void> logged(CompletionStage<Void> settlement, Throttle throttle, boolean success) {
		return settlement.handle((ignored, error) -> {
			if (error != null) {
				if (success) {
					settlementFailed(throttle, StoreStages.unwrap(error));
				}
				else {
					giveBackFailed(throttle, StoreStages.unwrap(error));
				}
			}
			return null;
		});
	}

	private static void settlementFailed(Throttle throttle, Throwable ex) {
		logger.warn("Could not " + (throttle.resetOnSuccess() ? "reset" : "refund") + " policy '"
				+ throttle.policy().name() + "' after a successful call; the call's result stands", ex);
	}

	private static void giveBackFailed(Throttle throttle, Throwable ex) {
		logger.warn("Could not give back what policy '" + throttle.policy().name()
				+ "' took for a call that a later policy refused; the refusal stands", ex);
	}

}
