package dev.throttle.spring.internal.aop;

import dev.throttle.spring.admission.Charge;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.core.ReactiveAdapter;
import org.springframework.http.ResponseEntity;

/**
 * Settles a call that was throttled before it ran (a plain call, blocking if the store does) by
 * its real outcome, never earlier: at once for a value (unless it is a ResponseEntity with an
 * error status), when a CompletionStage completes, when a reactive value (returned as it is, or
 * as a ResponseEntity's body) completes. A value whose outcome cannot be seen (a method declared to
 * return Object that returned a Callable) is never settled as a success, and that is said once per
 * method at WARN. A call that holds a concurrency slot is ended on every path: a failure (an error
 * status, a failed stage or publisher, a cancelled subscription) releases it too, and a value whose
 * outcome Spring MVC learns later (an emitter, a {@code StreamingResponseBody}, a
 * {@code DeferredResult}, a {@code Callable}) releases it when the request's asynchronous
 * processing completes, times out or fails.
 */
final class Outcomes {

    private static final Log logger = LogFactory.getLog(Outcomes.class);

    private Outcomes() {}

    /**
     * Settles a call that returned normally, now or when its outcome is known.
     * @param throttled the method
     * @param taken what the call took, and its request
     * @param result what the call returned
     * @return what the caller gets: the result, or one that settles the call on its outcome
     */
    static Object settle(ThrottledMethod throttled, Admitted taken, Object result) {
        return settle(throttled, taken, result, false);
    }

    /**
     * Settles a call that returned normally, now or when its outcome is known.
     * @param throttled the method
     * @param taken what the call took, and its request
     * @param result what the call returned
     * @param answeredWithError whether the call itself set its response's status to an error (a
     * handler that calls {@code response.sendError(401)} and returns nothing): a plain value is then
     * a failure, whatever it is
     * @return what the caller gets: the result, or one that settles the call on its outcome
     */
    static Object settle(ThrottledMethod throttled, Admitted taken, Object result, boolean answeredWithError) {
        if (answeredWithError && isPlain(result)) {
            taken.read(result);
            taken.failed();
            return result;
        }
        if (answeredWithError && result instanceof CompletionStage<?> stage) {
            // the handler answered an error before it returned its future: a failure when that completes
            return stage(throttled, taken, stage, true);
        }
        return switch (throttled.plan().kind()) {
            case STAGE ->
                (result instanceof CompletionStage<?> stage)
                        ? stage(throttled, taken, stage)
                        : now(throttled, taken, result);
            case FOLLOWED -> follow(throttled, taken, result);
            case HIDDEN -> throttled.releasesAtEnd() ? atRequestEnd(throttled, taken, result) : result;
            default -> now(throttled, taken, result);
        };
    }

    /** A value that is the outcome itself: no stage, no reactive type, nothing Spring MVC completes later, no entity (whose status Spring writes). */
    private static boolean isPlain(Object result) {
        return result == null
                || !(result instanceof CompletionStage<?>
                        || ReturnTypes.isEntity(result)
                        || ReturnTypes.adapterFor(result.getClass()) != null
                        || ReturnTypes.hides(result.getClass()));
    }

    private static Object now(ThrottledMethod throttled, Admitted taken, Object result) {
        taken.read(result);
        if (!ReturnTypes.isFailure(result)) {
            taken.succeeded();
        } else {
            taken.failed();
        }
        return result;
    }

    /**
     * A value whose outcome Spring MVC learns later: its slot is released when the request's
     * asynchronous processing ends (no value: now). Outside a request nothing ever tells its end:
     * released now, and said once per method.
     */
    private static Object atRequestEnd(ThrottledMethod throttled, Admitted taken, Object result) {
        if (result == null) {
            taken.admission().failed();
        } else if (!taken.request().releaseWhenRequestEnds(taken.admission())) {
            if (throttled.reportHiddenOutcome()) {
                logger.warn(ThrottledAnnotations.describe(throttled.method()) + " returned a "
                        + result.getClass().getSimpleName() + " outside a web request, whose end cannot be seen:"
                        + " its concurrency slot is released when the method returns (said once per method)");
            }
            taken.admission().failed();
        }
        return result;
    }

    /**
     * The call's outcome is the stage's: settle when it completes, before the caller sees it. The
     * caller gets a stage of its own behind the settling one: a caller that completes or cancels
     * what it got (a timeout of its own, Spring MVC's async timeout) must not skip the settling,
     * which a stage completed first never runs (the slot would stay taken, the actual cost unpaid).
     */
    private static Object stage(ThrottledMethod throttled, Admitted taken, CompletionStage<?> stage) {
        return stage(throttled, taken, stage, false);
    }

    private static Object stage(
            ThrottledMethod throttled, Admitted taken, CompletionStage<?> stage, boolean answeredWithError) {
        CompletionStage<?> settling = stage.whenComplete((value, error) -> {
            if (error == null) {
                taken.read(value);
            }
            if (error == null && !answeredWithError && !ReturnTypes.isFailure(value)) {
                taken.succeeded();
            } else {
                taken.failed();
            }
        });
        CompletionStage<?> settled = settling.thenApply(Function.identity());
        return throttled.method().getReturnType().isInstance(settled) ? settled : stage;
    }

    private static Object follow(ThrottledMethod throttled, Admitted taken, Object result) {
        if (result instanceof CompletionStage<?> stage) {
            return stage(throttled, taken, stage);
        }
        if (ReturnTypes.isEntity(result)) {
            return Entities.follow(throttled, taken, result);
        }
        Object followed = followed(throttled, taken, result);
        return (followed != null) ? followed : result;
    }

    /**
     * Follows a value that may be reactive or hide its outcome.
     * @return the value that settles the call on its outcome, or null when the call was dealt with
     * (settled now, or not at all)
     */
    private static Object followed(ThrottledMethod throttled, Admitted taken, Object value) {
        if (value != null) {
            ReactiveAdapter adapter = ReturnTypes.adapterFor(value.getClass());
            if (adapter != null) {
                return ReactiveThrottling.follow(value, adapter, taken);
            }
            if (ReturnTypes.hides(value.getClass())) {
                if (throttled.releasesAtEnd()) {
                    return atRequestEnd(throttled, taken, value);
                }
                if (throttled.reportHiddenOutcome()) {
                    logger.warn(policies(throttled) + " on " + ThrottledAnnotations.describe(throttled.method())
                            + " returned a " + value.getClass().getSimpleName() + ", whose outcome cannot be seen: "
                            + "such calls are never settled as a success (said once per method)");
                }
                return null;
            }
        }
        now(throttled, taken, value);
        return null;
    }

    private static String policies(ThrottledMethod throttled) {
        return throttled.throttles().stream()
                .filter(Charge::settlesOnSuccess)
                .map((throttle) -> "@Throttled(policy = \"" + throttle.policy().name() + "\")")
                .collect(Collectors.joining(", "));
    }

    /** Kept apart so that Outcomes loads without Spring Web. */
    static final class Entities {

        /** The status first: an error is a failure; then the body, which may be reactive. */
        static Object follow(ThrottledMethod throttled, Admitted taken, Object result) {
            ResponseEntity<?> entity = (ResponseEntity<?>) result;
            if (entity.getStatusCode().isError()) {
                taken.read(entity);
                taken.failed();
                return entity;
            }
            Object body = entity.getBody();
            Object followed;
            if (body instanceof CompletionStage<?> stage) {
                followed = Outcomes.stage(throttled, taken, stage);
            } else {
                followed = followed(throttled, taken, body);
            }
            return (followed != null) ? withBody(entity, followed) : entity;
        }

        /** The entity's status and headers with another body: the one that follows the call's outcome. */
        static ResponseEntity<Object> withBody(ResponseEntity<?> entity, Object body) {
            // the builder, not a constructor: its signatures are the same on Spring Framework 6 and 7
            return ResponseEntity.status(entity.getStatusCode())
                    .headers(entity.getHeaders())
                    .body(body);
        }
    }
}
