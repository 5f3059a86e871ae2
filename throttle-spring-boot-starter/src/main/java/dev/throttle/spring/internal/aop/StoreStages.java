package dev.throttle.spring.internal.aop;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

/**
 * The stages of a store's non-blocking calls as {@link ThrottleFlow} chains them: a call that
 * throws before it returns a stage fails like one whose stage fails, and a failure is seen as the
 * store's exception, never wrapped in a {@link CompletionException}.
 */
final class StoreStages {

	/** A stage that is done already: joining it to another is that other. */
	static final CompletionStage<Void> DONE = CompletableFuture.completedStage(null);

	private StoreStages() {
	}

	/**
	 * Calls a store operation, turning an exception it throws into a failed stage.
	 * @param <T> what the stage completes with
	 * @param call the store operation
	 * @return its stage, or a failed one
	 */
	static <T> CompletionStage<T> start(StoreCall<T> call) {
		try {
			return call.start();
		}
		catch (RuntimeException ex) {
			return failed(ex);
		}
	}

	/**
	 * Joins two stages that run side by side.
	 * @param first one stage
	 * @param second the other
	 * @return completes when both have
	 */
	static CompletionStage<Void> both(CompletionStage<Void> first, CompletionStage<Void> second) {
		return (first == DONE) ? second : first.thenCombine(second, (a, b) -> null);
	}

	/**
	 * A stage failed with the store's exception, unwrapped.
	 * @param <T> what the stage would complete with
	 * @param error the failure, wrapped or not
	 * @return the failed stage
	 */
	static <T> CompletionStage<T> failed(Throwable error) {
		return CompletableFuture.failedStage(unwrap(error));
	}

	/**
	 * The exception a stage failed with, without the {@link CompletionException} around it.
	 * @param error what a stage's handler was given
	 * @return the cause
	 */
	static Throwable unwrap(Throwable error) {
		return (error instanceof CompletionException && error.getCause() != null) ? error.getCause() : error;
	}

	/** One non-blocking store operation, which may throw before it returns its stage. */
	@FunctionalInterface
	interface StoreCall<T> {

		CompletionStage<T> start();

	}

}
