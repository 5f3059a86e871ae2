package dev.throttle.spring.redis;

import io.netty.util.concurrent.EventExecutor;
import io.netty.util.internal.ThreadExecutorMap;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.springframework.data.redis.connection.ReactiveRedisConnection;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.data.redis.core.script.RedisScript;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Mono;

/**
 * One policy's acquires and refunds by receipt, sent to Redis in batches when they wait at the same
 * moment: while one call of the policy is on its way, the calls that arrive queue here, and when it
 * answers they leave together, as one {@code EVALSHA} of the policy's batch script ({@code batch.lua}),
 * which runs the policy's own script for each in the order they queued. A call that finds nothing on
 * its way leaves at once, on its caller's thread, as the one call it would be without batching: a
 * caller alone never waits for a batch, and there is no timer.
 *
 * <p>What it saves: the client's and Redis's fixed cost per call (a command written, read and
 * dispatched, a script invoked), paid once per batch rather than per decision. What it costs: while
 * a call is on its way, the next acquires wait for its answer before they leave, where they would
 * otherwise have been written behind it (pipelined) at once.
 *
 * <p>Only acquires and refunds by receipt (a concurrency slot's release, an annotated call given back)
 * are batched; on a Redis Cluster a batch could only hold keys of one slot, and
 * acquires are sent one by one there ({@link RedisLimiter}). Each caller bounds its own wait by the
 * store's timeout, as for a single call; a batch fails as a whole: every acquire in it gets the failure.
 * A caller that gave up while its acquire was queued is dropped from the next batch; a call whose
 * callers have all given up is cancelled, as a single call is when its caller gives up (Lettuce then
 * drops it if it has not been written yet: a call held while Redis is unreachable is never sent when
 * Redis comes back, after the failure mode has answered its callers). One that some callers still
 * wait for is decided whole. Thread-safe, lock-free.
 */
final class DecisionBatches {

    /** The most acquires in one batch: a bound on the script's time in Redis, which runs nothing else meanwhile. */
    static final int MOST = 64;

    private final RedisCalls calls;

    private final PolicyScript single;

    private final String sha1;

    private final byte[] scriptBytes;

    private final Queue<Pending> queued = new ConcurrentLinkedQueue<>();

    /**
     * When the call of this policy on its way left ({@link System#nanoTime}, never 0), or 0 when none
     * is; the next batch leaves when it answers. One at a time: measured with two on their way,
     * batches were smaller and decisions per second fewer (the client's cost per call, not Redis, is
     * what a batch saves). A call on its way longer than the store's timeout no longer holds the next
     * back (its callers have given up): a Redis that never answers must not queue every later acquire
     * behind it, and no timer is set per call for that.
     */
    private final AtomicLong onItsWaySince = new AtomicLong();

    private final long timeoutNanos;

    /**
     * Releases sent on their own ({@link #refund}) that have not answered yet: while there are any, a
     * batch sent from an event loop waits behind them ({@link #sendNext}).
     */
    private final AtomicInteger releasesOnTheirWay = new AtomicInteger();

    /**
     * @param calls what the store's limiters share
     * @param script the policy's batch script ({@link RedisThrottleScripts#batchOf})
     * @param single the policy's script, for an acquire that leaves alone
     */
    @SuppressWarnings("rawtypes")
    DecisionBatches(RedisCalls calls, RedisScript<List> script, PolicyScript single) {
        this.calls = calls;
        this.single = single;
        this.timeoutNanos = calls.timeout().toNanos();
        this.sha1 = script.getSha1();
        this.scriptBytes = script.getScriptAsString().getBytes(StandardCharsets.UTF_8);
    }

    /** An acquire, queued; its reply is the script's, as a single acquire's. */
    CompletableFuture<List<Object>> acquire(String key, int cost) {
        return queue(key, PolicyScript.ACQUIRE, cost, null);
    }

    /**
     * A refund of exactly what the call with {@code receipt} took; its reply means nothing. Queued
     * while a call is on its way or queued (it leaves with the next batch); otherwise sent at once,
     * on its own, without holding back the call made next: a slot's release is not waited for
     * ({@link dev.throttle.Slot#close()}), and the caller's next acquire, written behind it on the
     * connection, leaves at once rather than wait for the release's answer, and is decided after it.
     */
    CompletableFuture<List<Object>> refund(String key, int cost, long receipt) {
        byte[] receiptArgument = PolicyScript.ascii(Long.toString(receipt));
        if (this.queued.isEmpty() && !onItsWay()) {
            // counted before it is handed over, so that a batch polled with the caller's next acquire sees it
            this.releasesOnTheirWay.incrementAndGet();
            CompletableFuture<List<Object>> released;
            try {
                released = this.single
                        .eval(key, PolicyScript.REFUND, cost, receiptArgument)
                        .toFuture();
            } catch (RuntimeException ex) {
                this.releasesOnTheirWay.decrementAndGet();
                throw ex;
            }
            released.whenComplete((reply, failure) -> this.releasesOnTheirWay.decrementAndGet());
            return released;
        }
        return queue(key, PolicyScript.REFUND, cost, receiptArgument);
    }

    /** Whether a call is on its way (and has not outlived the timeout). */
    private boolean onItsWay() {
        long since = this.onItsWaySince.get();
        return since != 0 && System.nanoTime() - since < this.timeoutNanos;
    }

    private CompletableFuture<List<Object>> queue(String key, byte[] operation, int cost, byte @Nullable [] receipt) {
        Pending pending = new Pending(key, operation, cost, this.calls.nowArgument(), receipt);
        pending.reply.whenComplete((reply, failure) -> {
            if (failure instanceof CancellationException) {
                pending.gaveUp();
            }
        });
        this.queued.add(pending);
        sendNext();
        return pending.reply;
    }

    /** Sends what is queued, unless a call is on its way (its answer sends the rest). */
    private void sendNext() {
        long stamp;
        while (!this.queued.isEmpty() && (stamp = claim()) != 0) {
            List<Pending> batch = new ArrayList<>(Math.min(this.queued.size(), MOST));
            Pending pending;
            while (batch.size() < MOST && (pending = this.queued.poll()) != null) {
                if (!pending.reply.isDone()) {
                    batch.add(pending);
                }
            }
            if (batch.isEmpty()) {
                this.onItsWaySince.compareAndSet(stamp, 0);
                continue;
            }
            // On an event loop (a reply's, most often), a command is written at once, ahead of the
            // commands other threads handed over before and that wait in the loop's task queue: a
            // release sent on its own by its caller's thread, then that caller's next acquire polled
            // here. While such a release is on its way (counted before this poll could see the acquire
            // made after it), the batch leaves from a task queued now, behind every command handed
            // over before its calls were queued. Otherwise it is written at once, so that Redis works
            // on it while this batch's callers are woken (measured: a task for every batch cost a
            // third of the batched decisions per second at 16 callers).
            EventExecutor loop = (this.releasesOnTheirWay.get() > 0) ? ThreadExecutorMap.currentExecutor() : null;
            if (loop == null) {
                sendOrFail(batch, stamp);
                return;
            }
            long claimed = stamp;
            try {
                loop.execute(() -> sendOrFail(batch, claimed));
            } catch (RejectedExecutionException ex) {
                // the loop is shutting down: sent from here, the batch fails as the connection does
                sendOrFail(batch, stamp);
            }
            return;
        }
    }

    private void sendOrFail(List<Pending> batch, long stamp) {
        try {
            send(batch, stamp);
        } catch (RuntimeException ex) {
            // never left: every later acquire of the policy would otherwise queue behind it
            fail(batch, stamp, ex);
        }
    }

    /** Marks a call on its way and returns its stamp; 0 when one is (and has not outlived the timeout). */
    private long claim() {
        long now = System.nanoTime();
        long stamp = (now != 0) ? now : 1;
        long since = this.onItsWaySince.get();
        if (since != 0 && now - since < this.timeoutNanos) {
            return 0;
        }
        return this.onItsWaySince.compareAndSet(since, stamp) ? stamp : 0;
    }

    private void send(List<Pending> batch, long stamp) {
        OnItsWay onItsWay = new OnItsWay(batch.size(), stamp);
        for (Pending pending : batch) {
            pending.call = onItsWay;
            if (pending.reply.isCancelled()) {
                // gave up between leaving the queue and now, before its call was known to it
                pending.gaveUp();
            }
        }
        Mono<List<Object>> call;
        if (batch.size() == 1) {
            Pending alone = batch.get(0);
            call = this.single.eval(alone.key, alone.operation, alone.cost, alone.receipt);
        } else {
            call = this.calls.connection().flatMap((connection) -> evalBatch(connection, batch));
        }
        // the next batch leaves before this one's callers are woken: Redis works while they wake
        onItsWay.started(call.subscribe(
                (reply) -> {
                    done(stamp);
                    answer(batch, reply);
                },
                (failure) -> fail(batch, stamp, failure)));
    }

    private void fail(List<Pending> batch, long stamp, Throwable failure) {
        done(stamp);
        for (Pending pending : batch) {
            pending.reply.completeExceptionally(failure);
        }
    }

    /** The call on its way has answered (or failed): what queued meanwhile leaves. */
    private void done(long stamp) {
        // a call that outlived the timeout answers after another took its place: that one still holds
        this.onItsWaySince.compareAndSet(stamp, 0);
        sendNext();
    }

    private static void answer(List<Pending> batch, List<Object> reply) {
        if (batch.size() == 1) {
            batch.get(0).reply.complete(reply);
            return;
        }
        // Lettuce hands a script's array reply over as one element, the list itself (ScriptReply reads both)
        @SuppressWarnings("unchecked")
        List<Object> values =
                (reply.size() == 1 && reply.get(0) instanceof List<?> nested) ? (List<Object>) nested : reply;
        int width = values.size() / batch.size();
        for (int i = 0; i < batch.size(); i++) {
            batch.get(i).reply.complete(values.subList(i * width, (i + 1) * width));
        }
    }

    private Mono<List<Object>> evalBatch(ReactiveRedisConnection connection, List<Pending> batch) {
        return connection
                .scriptingCommands()
                .<Object>evalSha(this.sha1, ReturnType.MULTI, batch.size(), keysAndArgs(batch))
                .collectList()
                .onErrorResume(
                        PolicyScript::isNoScript,
                        (ex) -> connection
                                .scriptingCommands()
                                .<Object>eval(
                                        ByteBuffer.wrap(this.scriptBytes),
                                        ReturnType.MULTI,
                                        batch.size(),
                                        keysAndArgs(batch))
                                .collectList());
    }

    /** The batch's keys, then four arguments per call: its operation, cost, now and receipt. */
    private ByteBuffer[] keysAndArgs(List<Pending> batch) {
        int size = batch.size();
        ByteBuffer[] keysAndArgs = new ByteBuffer[size * 5];
        for (int i = 0; i < size; i++) {
            Pending pending = batch.get(i);
            keysAndArgs[i] = this.single.redisKey(pending.key);
            int at = size + 4 * i;
            keysAndArgs[at] = ByteBuffer.wrap(pending.operation);
            keysAndArgs[at + 1] = PolicyScript.costArgument(pending.cost);
            keysAndArgs[at + 2] = pending.now.duplicate();
            keysAndArgs[at + 3] = ByteBuffer.wrap((pending.receipt != null) ? pending.receipt : NO_RECEIPT);
        }
        return keysAndArgs;
    }

    private static final byte[] NO_RECEIPT = {};

    /** An acquire waiting for its batch. */
    private static final class Pending {

        final String key;

        final byte[] operation;

        final int cost;

        final ByteBuffer now;

        final byte @Nullable [] receipt;

        final CompletableFuture<List<Object>> reply = new CompletableFuture<>();

        /** The call it left in; null while queued. */
        volatile @Nullable OnItsWay call;

        /** 1 once its giving up was counted by its call: it is counted once, whoever sees it first. */
        volatile int counted;

        Pending(String key, byte[] operation, int cost, ByteBuffer now, byte @Nullable [] receipt) {
            this.key = key;
            this.operation = operation;
            this.cost = cost;
            this.now = now;
            this.receipt = receipt;
        }

        void gaveUp() {
            OnItsWay call = this.call;
            if (call != null && COUNTED.compareAndSet(this, 0, 1)) {
                call.callerGaveUp();
            }
        }
    }

    private static final AtomicIntegerFieldUpdater<Pending> COUNTED =
            AtomicIntegerFieldUpdater.newUpdater(Pending.class, "counted");

    /** A call on its way, cancelled once every caller it answers has given up. */
    private final class OnItsWay {

        private final AtomicInteger waiting;

        private final long stamp;

        /** The call's subscription; disposing it before it is set disposes it when set. */
        private final Disposable.Swap subscription = Disposables.swap();

        OnItsWay(int callers, long stamp) {
            this.waiting = new AtomicInteger(callers);
            this.stamp = stamp;
        }

        void started(Disposable subscription) {
            this.subscription.update(subscription);
        }

        void callerGaveUp() {
            if (this.waiting.decrementAndGet() == 0) {
                this.subscription.dispose();
                done(this.stamp);
            }
        }
    }
}
