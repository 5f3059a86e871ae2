package dev.throttle.spring.aop;

import java.util.ArrayList;
import java.util.List;

import org.aopalliance.intercept.MethodInvocation;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import dev.throttle.ThrottledException;
import dev.throttle.Throttler;

/**
 * Throttles methods that return {@link Mono} or {@link Flux}: nothing happens until subscription;
 * then the decisions are made through the store's non-blocking API (never blocking an event-loop
 * thread), the method is called only if every policy allowed it, and the takings are settled when
 * the publisher completes. Loaded only when Reactor is on the classpath.
 */
final class ReactiveThrottling {

	private ReactiveThrottling() {
	}

	static boolean isReactive(Class<?> returnType) {
		return Mono.class.isAssignableFrom(returnType) || Flux.class.isAssignableFrom(returnType);
	}

	/**
	 * Throttles a reactive call.
	 * @param requests finds the request in the subscriber's context (WebFlux), or null
	 * @param bound the request the call was made in (Spring MVC), used when {@code requests} is null
	 */
	static Object invoke(MethodInvocation invocation, ThrottledMethod throttled, Throttler throttler,
			ThrottleInterceptor keys, ReactiveThrottleRequestContext requests, ThrottleRequestContext bound) {
		List<ThrottledMethod.Throttle> throttles = throttled.throttles();
		Mono<String[]> acquired = Mono
			.deferContextual((view) -> (requests != null) ? requests.current(view) : Mono.just(bound))
			.flatMap((request) -> acquireAll(throttler, throttles,
					keys.keys(throttled, invocation.getArguments(), request), request));
		if (Flux.class.isAssignableFrom(throttled.method().getReturnType())) {
			return acquired.flatMapMany((taken) -> Flux.from(proceed(invocation))
				.concatWith(Mono.defer(() -> settle(throttler, throttles, taken)).then(Mono.empty())));
		}
		return acquired.flatMap((taken) -> Mono.from(proceed(invocation))
			.flatMap((value) -> ThrottleInterceptor.isFailure(value) ? Mono.just(value)
					: settle(throttler, throttles, taken).thenReturn(value))
			.switchIfEmpty(Mono.defer(() -> settle(throttler, throttles, taken).then(Mono.empty()))));
	}

	private static Mono<String[]> acquireAll(Throttler throttler, List<ThrottledMethod.Throttle> throttles,
			String[] keys, ThrottleRequestContext request) {
		List<PolicyDecision> decisions = new ArrayList<>(throttles.size());
		Mono<Integer> chain = Mono.just(0);
		for (int i = 0; i < throttles.size(); i++) {
			int index = i;
			ThrottledMethod.Throttle throttle = throttles.get(i);
			chain = chain.flatMap((ignored) -> Mono
				.fromCompletionStage(() -> throttler.tryAcquireAsync(throttle.policy().name(), keys[index], throttle.cost()))
				.flatMap((decision) -> {
					if (!decision.allowed()) {
						return refundTaken(throttler, throttles, keys, index)
							.then(Mono.error(new ThrottledException(throttle.policy(), decision)));
					}
					decisions.add(new PolicyDecision(throttle.policy(), decision));
					return Mono.just(index);
				}));
		}
		return chain.map((ignored) -> {
			request.allowed(decisions);
			return keys;
		});
	}

	private static Mono<Void> refundTaken(Throttler throttler, List<ThrottledMethod.Throttle> throttles, String[] keys,
			int refused) {
		List<Mono<Void>> refunds = new ArrayList<>();
		for (int j = 0; j < refused; j++) {
			ThrottledMethod.Throttle taken = throttles.get(j);
			String key = keys[j];
			refunds.add(Mono.fromCompletionStage(() -> throttler.refundAsync(taken.policy().name(), key, taken.cost())));
		}
		return Mono.when(refunds);
	}

	private static Mono<Void> settle(Throttler throttler, List<ThrottledMethod.Throttle> throttles, String[] keys) {
		List<Mono<Void>> settlements = new ArrayList<>();
		for (int i = 0; i < throttles.size(); i++) {
			ThrottledMethod.Throttle throttle = throttles.get(i);
			String key = keys[i];
			if (throttle.resetOnSuccess()) {
				settlements.add(Mono.fromCompletionStage(() -> throttler.resetAsync(throttle.policy().name(), key)));
			}
			else if (throttle.refundOnSuccess()) {
				settlements
					.add(Mono.fromCompletionStage(() -> throttler.refundAsync(throttle.policy().name(), key, throttle.cost())));
			}
		}
		// the call itself succeeded: failing to settle must not turn it into an error
		return Mono.when(settlements).onErrorResume((ex) -> Mono.empty());
	}

	@SuppressWarnings("unchecked")
	private static Publisher<Object> proceed(MethodInvocation invocation) {
		try {
			Object result = invocation.proceed();
			return (result != null) ? (Publisher<Object>) result : Mono.empty();
		}
		catch (Throwable ex) {
			return Mono.error(ex);
		}
	}

}
