package dev.throttle.spring.redis;

import io.lettuce.core.api.async.RedisAsyncCommands;
import io.netty.util.concurrent.FastThreadLocalThread;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The {@code WAIT 1} of one connection, shared by the writes sent on it: a {@code WAIT} confirms every
 * write sent on its connection before it, so the writes that are sent while one is on its way are
 * confirmed together by the next, sent as soon as it answers. A write alone gets its own at once. So
 * the writes of many callers cost one {@code WAIT} per round trip to the replica, not one each
 * behind the other (a {@code WAIT} holds its connection until it answers).
 *
 * <p>A write joins the group of the next {@code WAIT} after it has been sent: the group it joins is
 * swapped out, and its {@code WAIT} sent, only after the write was. Thread-safe; lock-free.
 */
final class ReplicaConfirmations {

    private final RedisAsyncCommands<byte[], byte[]> commands;

    private final long waitMillis;

    /** Where a {@code WAIT} that the connection's event loop would send is sent from instead. */
    private final Executor sender;

    /** The writes that the next {@code WAIT} confirms. */
    private final AtomicReference<Group> next = new AtomicReference<>(new Group());

    /** Whether a {@code WAIT} is on its way. */
    private final AtomicBoolean waiting = new AtomicBoolean();

    ReplicaConfirmations(RedisAsyncCommands<byte[], byte[]> commands, long waitMillis, Executor sender) {
        this.commands = commands;
        this.waitMillis = waitMillis;
        this.sender = sender;
    }

    /**
     * How many replicas confirmed a write that has been sent on this connection (call it after the
     * write's command was issued): the answer of the first {@code WAIT} sent after it.
     */
    CompletableFuture<Long> afterSent() {
        Group group = this.next.get();
        group.writes.incrementAndGet();
        sendIfIdle();
        return group.replicas;
    }

    /** Sends the next group's {@code WAIT}, unless one is on its way (its answer sends it then). */
    private void sendIfIdle() {
        if (!this.waiting.compareAndSet(false, true)) {
            return;
        }
        if (Thread.currentThread() instanceof FastThreadLocalThread) {
            // a command sent from the connection's event loop (where the previous WAIT's answer
            // arrives) is written at once, ahead of the writes other threads have queued to that loop:
            // a WAIT sent there could overtake a write of its own group and confirm it unsent
            try {
                this.sender.execute(this::send);
            } catch (RuntimeException ex) {
                this.next.getAndSet(new Group()).replicas.completeExceptionally(ex);
                this.waiting.set(false);
            }
            return;
        }
        send();
    }

    /**
     * Sends the {@code WAIT} of the writes that joined the next group, from a thread that is not the
     * connection's event loop: there it is queued behind every write queued before the group was
     * taken, which every write of the group was.
     */
    private void send() {
        Group group = this.next.getAndSet(new Group());
        try {
            this.commands.waitForReplication(1, this.waitMillis).whenComplete((replicas, failure) -> {
                if (failure != null) {
                    group.replicas.completeExceptionally(failure);
                } else {
                    group.replicas.complete(replicas);
                }
                this.waiting.set(false);
                if (this.next.get().writes.get() > 0) {
                    sendIfIdle();
                }
            });
        } catch (RuntimeException ex) {
            group.replicas.completeExceptionally(ex);
            this.waiting.set(false);
        }
    }

    /** The writes one {@code WAIT} confirms, and its answer. */
    private static final class Group {

        final AtomicInteger writes = new AtomicInteger();

        final CompletableFuture<Long> replicas = new CompletableFuture<>();
    }
}
