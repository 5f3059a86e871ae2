package dev.throttle.spring.aop;

import java.util.List;

import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Throttles methods that return {@link Mono} or {@link Flux}: nothing happens until subscription;
 * then the keys are evaluated against the request found then, the decisions are made through the
 * store's non-blocking API (never blocking an event-loop thread), the method is called only if
 * every policy allowed it, and the call is settled when the publisher's outcome is known (a Mono's
 * value, a Flux's completion). The steps themselves are {@link ThrottleFlow}'s. Loaded only when
 * Reactor is on the classpath.
 */
final class ReactiveThrottling {

	private ReactiveThrottling() {
	}

	/**
	 * Throttles a reactive call.
	 * @param throttled the method's throttles and keys
	 * @param arguments the call's arguments
	 * @param requests finds the request in the subscriber's context (WebFlux), or null
	 * @param bound the request the call was made in (Spring MVC), used when {@code requests} is null
	 * @param call runs the call and returns its publisher
	 * @return a Mono or a Flux, as the method declares
	 */
	static Object throttle(ThrottledMethod throttled, Object[] arguments, ReactiveThrottleRequestContext requests,
			ThrottleRequestContext bound, Call call) {
		List<Throttle> throttles = throttled.throttles();
		Mono<ThrottleRequestContext> request = (requests != null) ? Mono.deferContextual(requests::current)
				: Mono.just(bound);
		Mono<Taken> acquired = request.flatMap((context) -> {
			String[] keys = throttled.keys().evaluate(arguments, context);
			return Mono.fromCompletionStage(ThrottleFlow.acquireAsync(throttles, keys, context))
				.map((decisions) -> new Taken(keys, decisions, context));
		});
		if (throttled.many()) {
			return acquired.flatMapMany((taken) -> {
				Flux<Object> values = Flux.from(proceed(call));
				return throttled.settlesOnSuccess() ? values.concatWith(settled(throttles, taken)) : values;
			});
		}
		if (!throttled.settlesOnSuccess()) {
			return acquired.flatMap((taken) -> Mono.from(proceed(call)));
		}
		return acquired.flatMap((taken) -> Mono.from(proceed(call))
			.flatMap((value) -> ReturnTypes.isFailure(value) ? Mono.just(value)
					: settled(throttles, taken).thenReturn(value))
			.switchIfEmpty(settled(throttles, taken)));
	}

	/** Settles a success when subscribed; completes empty, and never fails (see {@link ThrottleFlow}). */
	private static <T> Mono<T> settled(List<Throttle> throttles, Taken taken) {
		return Mono
			.fromCompletionStage(
					() -> ThrottleFlow.settleAsync(throttles, taken.keys(), taken.decisions(), taken.request()))
			.then(Mono.empty());
	}

	/** What a call took: its keys, its decisions (their receipts) and its request, for settling it. */
	private record Taken(String[] keys, List<PolicyDecision> decisions, ThrottleRequestContext request) {
	}

	@SuppressWarnings("unchecked")
	private static Publisher<Object> proceed(Call call) {
		try {
			Object result = call.proceed();
			return (result != null) ? (Publisher<Object>) result : Mono.empty();
		}
		catch (Throwable ex) {
			return Mono.error(ex);
		}
	}

	/**
	 * Runs a throttled call: a method invocation's {@code proceed}, or any step that returns the
	 * call's publisher.
	 */
	@FunctionalInterface
	interface Call {

		/**
		 * Runs the call.
		 * @return the call's publisher (null counts as empty)
		 * @throws Throwable what the call threw
		 */
		Object proceed() throws Throwable;

	}

}
