package dev.throttle.spring.redis;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import reactor.core.publisher.Mono;

/**
 * The timeout of one policy's Redis calls, and what a failed call becomes: a
 * {@link RedisStoreException} that names the operation and the policy, never the key. After a
 * failure other than a timeout or an error reply, the store obtains its connection again.
 *
 * <p>The synchronous calls bound the call by waiting on its future for at most the timeout, and
 * cancel it when it has not answered by then (Lettuce drops a command not sent yet; one already sent
 * still runs when Redis gets to it, once, and its answer is dropped): the same bound and the
 * same failure as the asynchronous calls' Reactor timeout, without its per-call cost (a task
 * scheduled and cancelled on Reactor's timer, and a description string built per subscription),
 * which was a third of the client's CPU per decision under 64 callers (benchmarks/README.md).
 * Thread-safe.
 */
final class CallBounds {

    private final RedisCalls calls;

    private final String policy;

    private final Duration timeout;

    private final long waitNanos;

    CallBounds(RedisCalls calls, String policy, Duration timeout) {
        this.calls = calls;
        this.policy = policy;
        this.timeout = timeout;
        this.waitNanos = timeout.toNanos();
    }

    <T> Mono<T> bounded(Mono<T> call, String operation) {
        return call.timeout(this.timeout)
                .onErrorMap((ex) -> !(ex instanceof RedisStoreException), (ex) -> failure(operation, ex));
    }

    /** What a failed call becomes: a {@link RedisStoreException} naming the operation and the policy. */
    RedisStoreException failure(String operation, Throwable ex) {
        this.calls.callFailed();
        if (!(ex instanceof TimeoutException) && !(ex instanceof InterruptedException) && !isErrorReply(ex)) {
            this.calls.connectionFailed();
        }
        String reason =
                (ex instanceof TimeoutException) ? "no answer within " + this.timeout.toMillis() + "ms" : reason(ex);
        return new RedisStoreException(
                "Redis " + operation + " for throttle policy '" + this.policy + "' failed: " + reason, ex);
    }

    <T> T await(CompletableFuture<T> future, String operation) {
        try {
            return future.get(this.waitNanos, TimeUnit.NANOSECONDS);
        } catch (ExecutionException ex) {
            Throwable cause = ex.getCause();
            throw (cause instanceof RedisStoreException failure) ? failure : failure(operation, cause);
        } catch (TimeoutException ex) {
            future.cancel(true);
            throw failure(operation, ex);
        } catch (InterruptedException ex) {
            future.cancel(true);
            Thread.currentThread().interrupt();
            throw failure(operation, ex);
        }
    }

    /**
     * Redis's own error reply where there is one ("OOM command not allowed…", "READONLY…",
     * "CLUSTERDOWN…"), which the clients' wrappers hide behind messages such as "Error in execution";
     * otherwise the failure's own message.
     */
    private static String reason(Throwable ex) {
        String reply = RedisErrorReplies.message(ex);
        return (reply != null) ? reply : String.valueOf(ex.getMessage());
    }

    /** Whether Redis answered with an error (the connection works; obtaining it again cannot help). */
    private static boolean isErrorReply(Throwable ex) {
        for (Throwable cause = ex; cause != null; cause = cause.getCause()) {
            if (cause instanceof io.lettuce.core.RedisCommandExecutionException) {
                return true;
            }
        }
        return false;
    }
}
