package dev.throttle.spring.redis;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.codec.ByteArrayCodec;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import reactor.core.publisher.Mono;

/**
 * The writes of the policies with {@code durability: replicated}: each is the policy's script (or a
 * {@code DEL}) followed by a {@code WAIT 1}, so that a decision is answered only once a replica has it
 * and a failover cannot take it back. They go on a connection of their own, opened once from the
 * application's Lettuce client (so through Sentinel to whichever master it names): {@code WAIT}
 * holds its connection until a replica answers, and on the application's shared connection it would
 * hold every other call behind it. The writes sent while a {@code WAIT} is on its way share the next
 * one ({@link ReplicaConfirmations}). A replica has three quarters of the store's timeout to answer,
 * so that a write that was not confirmed is told apart from one that got no answer at all.
 *
 * <p>On a Redis Cluster the connection is a cluster connection of its own, and both commands go to
 * the key's master, by its slot, on that connection's link to the master: {@code WAIT} waits for
 * the replicas of the master that took the write (sent through the cluster connection, Lettuce would
 * route it to a node of its choosing). The topology is the client's, which the store has Lettuce read
 * again when a call fails, so that a promoted replica takes its master's keys. Thread-safe; lock-free.
 */
final class ReplicatedWrites {

    private static final Log logger = LogFactory.getLog(RedisThrottleStore.class);

    private final Supplier<AbstractRedisClient> client;

    /** {@code WAIT}'s own timeout, in milliseconds. */
    private final long waitMillis;

    private final AtomicReference<CompletableFuture<StatefulConnection<byte[], byte[]>>> connection =
            new AtomicReference<>();

    /** By connection (the one, or a Cluster master's link), its commands and shared {@code WAIT}s. */
    private final Map<StatefulRedisConnection<byte[], byte[]>, Link> links = new ConcurrentHashMap<>();

    /** What writes here, for the startup check's message: "policies a, b" or "bans c". */
    private final String writers;

    /**
     * Sends the {@code WAIT}s that a previous {@code WAIT}'s answer calls for, off the connection's
     * event loop: one thread, in order, started when there is one to send and gone when idle (not the
     * common pool, which an application's own tasks can fill).
     */
    private final ExecutorService waitSender =
            new ThreadPoolExecutor(0, 1, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), (task) -> {
                Thread thread = new Thread(task, "throttle-redis-wait");
                thread.setDaemon(true);
                return thread;
            });

    /** Whether the connection's first look at the master's replicas has run. */
    private volatile boolean replicasChecked;

    ReplicatedWrites(Supplier<AbstractRedisClient> client, Duration timeout, String writers) {
        this.client = client;
        this.waitMillis = Math.max(1, timeout.toMillis() * 3 / 4);
        this.writers = writers;
    }

    /**
     * The writes made through {@code connectionFactory}, which must be Lettuce's (reactive or not).
     * @param writers what writes, for messages: "policies a, b" or "bans c"
     */
    static ReplicatedWrites of(Object connectionFactory, Duration timeout, String writers) {
        if (!(connectionFactory instanceof LettuceConnectionFactory lettuce)) {
            throw new IllegalArgumentException("durability: replicated (" + writers
                    + ") needs Spring Boot's Lettuce connection factory, was "
                    + connectionFactory.getClass().getName());
        }
        return new ReplicatedWrites(lettuce::getRequiredNativeClient, timeout, writers);
    }

    /** {@code WAIT}'s timeout in milliseconds. */
    long waitMillis() {
        return this.waitMillis;
    }

    /**
     * The policy's script ({@code EVAL} when Redis lost it), then {@code WAIT 1}: the script's reply
     * once a replica has the write; {@link NotReplicatedException} when none confirmed it in time.
     */
    Mono<List<Object>> eval(String sha1, byte[] script, byte[] key, byte[][] args) {
        byte[][] keys = {key};
        return linkFor(key).flatMap((link) -> {
            RedisFuture<List<Object>> reply = link.commands.evalsha(sha1, ScriptOutputType.MULTI, keys, args);
            CompletableFuture<Long> replicas = link.confirmations.afterSent();
            return confirmed(reply, replicas).onErrorResume(PolicyScript::isNoScript, (ex) -> {
                RedisFuture<List<Object>> again = link.commands.eval(script, ScriptOutputType.MULTI, keys, args);
                return confirmed(again, link.confirmations.afterSent());
            });
        });
    }

    /** A {@code DEL} of the key, then {@code WAIT 1}. */
    Mono<Long> delete(byte[] key) {
        return linkFor(key).flatMap((link) -> {
            RedisFuture<Long> deleted = link.commands.del(key);
            return confirmed(deleted, link.confirmations.afterSent());
        });
    }

    /**
     * Where the key's write goes: the one connection, or on a Cluster that connection's link to the
     * master of the key's slot.
     */
    private Mono<Link> linkFor(byte[] key) {
        return connection().flatMap((connection) -> {
            if (connection instanceof StatefulRedisClusterConnection<byte[], byte[]> cluster) {
                RedisClusterNode master = cluster.getPartitions().getMasterBySlot(SlotHash.getSlot(key));
                if (master == null) {
                    return Mono.error(new RedisException("no Redis Cluster master serves the key's slot"));
                }
                return Mono.fromFuture(cluster.getConnectionAsync(master.getNodeId()), true)
                        .map(this::link);
            }
            @SuppressWarnings("unchecked")
            StatefulRedisConnection<byte[], byte[]> single = (StatefulRedisConnection<byte[], byte[]>) connection;
            return Mono.just(link(single));
        });
    }

    /** A connection's commands and the {@code WAIT}s its writes share; one per connection. */
    private Link link(StatefulRedisConnection<byte[], byte[]> connection) {
        Link link = this.links.get(connection);
        return (link != null)
                ? link
                : this.links.computeIfAbsent(connection, (opened) -> {
                    RedisAsyncCommands<byte[], byte[]> commands = opened.async();
                    return new Link(commands, new ReplicaConfirmations(commands, this.waitMillis, this.waitSender));
                });
    }

    /** A write's reply once {@code WAIT} says a replica has it. */
    private <T> Mono<T> confirmed(RedisFuture<T> write, CompletableFuture<Long> replicas) {
        return Mono.fromCompletionStage(write)
                .flatMap((reply) -> Mono.fromFuture(replicas, true)
                        .flatMap((count) -> (count >= 1)
                                ? Mono.just(reply)
                                : Mono.error(new NotReplicatedException(
                                        "NOTREPLICATED no replica confirmed the write within " + this.waitMillis
                                                + "ms (WAIT 1); the master may have no replica, or be failing over"))));
    }

    /**
     * The connection, opened on a background thread the first time (opening it may block, and through
     * Sentinel asks a sentinel first); Lettuce reconnects it after that. A failed open is tried again
     * by the next call.
     */
    private Mono<StatefulConnection<byte[], byte[]>> connection() {
        CompletableFuture<StatefulConnection<byte[], byte[]>> ready = this.connection.get();
        if (ready != null && !ready.isCompletedExceptionally()) {
            return StoreConnection.awaiting(ready);
        }
        CompletableFuture<StatefulConnection<byte[], byte[]>> attempt = new CompletableFuture<>();
        if (!this.connection.compareAndSet(ready, attempt)) {
            return connection();
        }
        Thread thread = new Thread(
                () -> {
                    try {
                        AbstractRedisClient client = this.client.get();
                        if (client instanceof RedisClusterClient cluster) {
                            attempt.complete(cluster.connect(ByteArrayCodec.INSTANCE));
                        } else if (client instanceof RedisClient redis) {
                            StatefulRedisConnection<byte[], byte[]> opened = redis.connect(ByteArrayCodec.INSTANCE);
                            attempt.complete(opened);
                            checkReplicas(opened);
                        } else {
                            throw new IllegalStateException("durability: replicated needs Lettuce's RedisClient or "
                                    + "RedisClusterClient, found "
                                    + client.getClass().getName());
                        }
                    } catch (RuntimeException | Error ex) {
                        attempt.completeExceptionally(ex);
                    }
                },
                "throttle-redis-replicated-connect");
        thread.setDaemon(true);
        thread.start();
        return StoreConnection.awaiting(attempt);
    }

    /**
     * Warns once when the master has no replica: every write of these policies or bans then waits out
     * {@code WAIT}'s timeout and is answered by the failure mode.
     */
    private void checkReplicas(StatefulRedisConnection<byte[], byte[]> connection) {
        if (this.replicasChecked) {
            return;
        }
        this.replicasChecked = true;
        try {
            String info = connection.sync().info("replication");
            if (info != null && info.contains("connected_slaves:0")) {
                logger.warn("Throttle " + this.writers + " have durability: replicated, but the Redis "
                        + "master has no connected replica: each of their writes will wait " + this.waitMillis
                        + "ms for one and then be answered by the failure mode.\n\nAction:\n\nGive the master a "
                        + "replica (Sentinel, or REPLICAOF on another Redis), or remove durability: replicated "
                        + "from them.");
            }
        } catch (RuntimeException ex) {
            // best effort: a write that finds no replica says so in its own failure
        }
    }

    /** Closes the connection, if one was opened, and stops sending {@code WAIT}s. */
    void close() {
        this.waitSender.shutdown();
        CompletableFuture<StatefulConnection<byte[], byte[]>> opened = this.connection.getAndSet(null);
        if (opened != null) {
            opened.thenAccept(StatefulConnection::closeAsync);
        }
    }

    /** A connection's commands, and the {@code WAIT}s its writes share. */
    private record Link(RedisAsyncCommands<byte[], byte[]> commands, ReplicaConfirmations confirmations) {}

    /** A write that Redis carried out but no replica confirmed in time: it may not survive a failover. */
    static final class NotReplicatedException extends RedisCommandExecutionException {

        private static final long serialVersionUID = 1L;

        NotReplicatedException(String message) {
            super(message);
        }
    }
}
