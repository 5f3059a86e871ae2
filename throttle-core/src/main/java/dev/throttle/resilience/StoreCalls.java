package dev.throttle.resilience;

import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.SourcedDecision;
import dev.throttle.ThrottleListener;
import java.lang.System.Logger.Level;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * How a {@link ResilientLimiter} calls its store: skipped while the key's partition of the store is
 * known to be down (a probe then runs), counted as an answer or a failure in that partition's
 * {@link StoreHealth}, and, when the store cannot answer, reported to the listener and answered by a
 * fallback instead.
 */
final class StoreCalls {

    private static final System.Logger logger = System.getLogger(ResilientThrottleStore.class.getName());

    private final Policy policy;

    private final Limiter store;

    private final StoreHealths healths;

    private final ThrottleListener listener;

    StoreCalls(Policy policy, Limiter store, StoreHealths healths, ThrottleListener listener) {
        this.policy = policy;
        this.store = store;
        this.healths = healths;
        this.listener = listener;
    }

    <T> T call(String key, Supplier<T> store, Supplier<T> fallback) {
        StoreHealth health = healthOf(key);
        RuntimeException error = skipStore(health);
        if (error == null) {
            T result;
            try {
                result = store.get();
            } catch (RuntimeException ex) {
                return answerInstead(failed(health, ex), fallback);
            }
            answered(health, result);
            return result;
        }
        return answerInstead(error, fallback);
    }

    <T> CompletionStage<T> callAsync(String key, Supplier<CompletionStage<T>> store, Supplier<T> fallback) {
        StoreHealth health = healthOf(key);
        RuntimeException error = skipStore(health);
        if (error == null) {
            try {
                return store.get().handle((result, failure) -> {
                    if (failure != null) {
                        return answerInstead(failed(health, unwrap(failure)), fallback);
                    }
                    answered(health, result);
                    return result;
                });
            } catch (RuntimeException ex) {
                error = failed(health, ex);
            }
        }
        return CompletableFuture.completedFuture(answerInstead(error, fallback));
    }

    /** The health of the partition of the store that holds {@code key}. */
    StoreHealth healthOf(String key) {
        return this.healths.of(this.store, key);
    }

    /**
     * Returns null when the store is to be asked; otherwise, the key's partition being known to be
     * down, what to report, and starts a probe so that the outage ends as soon as it answers. A call
     * that goes to the store while another partition is down probes that one too.
     */
    @Nullable
    RuntimeException skipStore(StoreHealth health) {
        if (!health.isDown()) {
            if (this.healths.isDown()) {
                this.healths.probeOthers(health, this.store);
            }
            return null;
        }
        health.probe(this.healths.prober(this.store));
        return health.unavailable();
    }

    /** Counts an answer of the store, unless a near cache gave it without asking the store. */
    private static void answered(StoreHealth health, Object result) {
        if (!(result instanceof SourcedDecision sourced && sourced.source().isNearCache())) {
            health.answered();
        }
    }

    /**
     * Counts a failed call against the store, unless the caller's own thread was interrupted while
     * it waited: the caller gave up, the store did not fail, and one interrupted request must not
     * put every call of the instance on the failure mode.
     */
    static RuntimeException failed(StoreHealth health, RuntimeException error) {
        if (!StoreHealth.isInterrupt(error)) {
            health.failed(error);
        }
        return error;
    }

    private <T> T answerInstead(RuntimeException error, Supplier<T> fallback) {
        report(error);
        return fallback.get();
    }

    void report(RuntimeException error) {
        try {
            this.listener.onStoreError(this.policy, error);
        } catch (RuntimeException ex) {
            // a listener's failure must not turn an answered call into a failed one
            logger.log(Level.DEBUG, "ThrottleListener.onStoreError threw", ex);
        }
    }

    static RuntimeException unwrap(Throwable error) {
        Throwable cause = (error instanceof CompletionException && error.getCause() != null) ? error.getCause() : error;
        if (cause instanceof RuntimeException runtime) {
            return runtime;
        }
        return (error instanceof RuntimeException runtime) ? runtime : new CompletionException(error);
    }
}
