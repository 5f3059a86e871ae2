package dev.throttle.spring.internal.aop;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A call that returns a {@link CompletionStage} and must wait for its turn: the method runs when the
 * turn comes, on a timer, and no thread is held meanwhile. The caller gets a stage at once; cancelling
 * it (or completing it otherwise) before the turn gives back everything the call took, so that the
 * next caller gets the turn.
 */
final class Waiting {

    private Waiting() {}

    /** Whether the method's declared type takes the {@link CompletableFuture} that {@link #later} returns. */
    static boolean delaysStage(ThrottledMethod throttled) {
        return throttled.plan().kind() == ReturnTypes.Kind.STAGE
                && throttled.method().getReturnType().isAssignableFrom(CompletableFuture.class);
    }

    /**
     * Runs the call when its turn comes, then settles it as {@link Outcomes} does.
     * @param throttled the method
     * @param taken what the call took, with the time until its turn
     * @param call runs the method and returns its stage
     * @return a stage that completes as the method's does
     */
    static CompletableFuture<Object> later(ThrottledMethod throttled, Admitted taken, ReactiveThrottling.Call call) {
        CompletableFuture<Object> result = new CompletableFuture<>();
        AtomicBoolean started = new AtomicBoolean();
        result.whenComplete((value, error) -> {
            if (started.compareAndSet(false, true)) {
                // given up before the turn came
                taken.admission().refundAsync();
            }
        });
        CompletableFuture.delayedExecutor(taken.admission().waitMillis(), TimeUnit.MILLISECONDS)
                .execute(() -> {
                    if (!started.compareAndSet(false, true)) {
                        return;
                    }
                    try {
                        Object stage = call.proceed();
                        if (throttled.settlesOnSuccess()) {
                            // on a timer thread, outside the request: only a declared error status is seen
                            stage = Outcomes.settle(
                                    throttled,
                                    taken,
                                    stage,
                                    throttled.errorAnswers().declared());
                        }
                        if (stage == null) {
                            result.complete(null);
                        } else {
                            ((CompletionStage<?>) stage).whenComplete((value, error) -> {
                                if (error != null) {
                                    result.completeExceptionally(error);
                                } else {
                                    result.complete(value);
                                }
                            });
                        }
                    } catch (Throwable ex) {
                        result.completeExceptionally(ex);
                    }
                });
        return result;
    }
}
