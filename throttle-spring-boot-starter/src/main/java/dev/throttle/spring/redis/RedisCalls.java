package dev.throttle.spring.redis;

import dev.throttle.TimeSource;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.data.redis.connection.ReactiveRedisConnection;
import org.springframework.data.redis.connection.ReturnType;
import reactor.core.publisher.Mono;

/**
 * What the limiters of one {@code RedisThrottleStore} share with it: the store's settings, its
 * connection, the {@code now} argument of every script, and the events channel (publishing a reset
 * or a refund, and whether this instance hears the others'). Built by the store, handed to each
 * limiter, so that a limiter needs nothing of the store itself. Thread-safe.
 */
final class RedisCalls {

    /** The store's {@code kind()}, which every decision's source names. */
    static final String KIND = "redis";

    /** An empty {@code now} argument: the script reads Redis {@code TIME}. Empty, so nothing can change it; callers duplicate it. */
    private static final ByteBuffer REDIS_TIME = ByteBuffer.allocate(0);

    /** A reset with a near cache: the key deleted, then the event published from the same node. */
    private static final ByteBuffer RESET_SCRIPT = ByteBuffer.wrap(
                    "redis.call('DEL', KEYS[1]) redis.call('PUBLISH', ARGV[1], ARGV[2]) return 1"
                            .getBytes(StandardCharsets.US_ASCII))
            .asReadOnlyBuffer();

    private final String keyPrefix;

    private final Duration timeout;

    private final @Nullable TimeSource clock;

    /** The application's clock, around whose time a calendar window's boundaries are sent. */
    private final TimeSource applicationClock;

    private final StoreConnection connection;

    /** The events channel's subscription; null without a near cache or without an imperative factory. */
    private final @Nullable RedisThrottleEvents events;

    /** The caller's trace, made the parent of every call's commands. */
    private final CallerTrace trace;

    /** This store's name in the events it publishes. */
    private final String sender;

    /** {@code <key-prefix>:events}; null when nothing is published. */
    private final @Nullable ByteBuffer channel;

    /** The masters of a Redis Cluster, by slot; null for standalone and Sentinel (one partition). */
    private final @Nullable ClusterNodes clusterNodes;

    /** Whether acquires that wait at the same moment are sent together ({@link DecisionBatches}). */
    private final boolean batching;

    /** The writes that wait for a replica; null when no policy has {@code durability: replicated}. */
    private final @Nullable ReplicatedWrites replicatedWrites;

    /** The policies whose writes wait for a replica. */
    private final Set<String> replicatedPolicies;

    RedisCalls(
            String keyPrefix,
            Duration timeout,
            @Nullable TimeSource clock,
            TimeSource applicationClock,
            StoreConnection connection,
            @Nullable RedisThrottleEvents events,
            CallerTrace trace,
            String sender,
            @Nullable ByteBuffer channel,
            @Nullable ClusterNodes clusterNodes,
            boolean batching,
            @Nullable ReplicatedWrites replicatedWrites,
            Set<String> replicatedPolicies) {
        this.keyPrefix = keyPrefix;
        this.timeout = timeout;
        this.clock = clock;
        this.applicationClock = applicationClock;
        this.connection = connection;
        this.events = events;
        this.trace = trace;
        this.sender = sender;
        this.channel = channel;
        this.clusterNodes = clusterNodes;
        this.batching = batching;
        this.replicatedWrites = replicatedWrites;
        this.replicatedPolicies = Set.copyOf(replicatedPolicies);
    }

    /**
     * The writes that wait for a replica when {@code policy} has {@code durability: replicated}, else
     * null.
     */
    @Nullable
    ReplicatedWrites replicatedWrites(String policy) {
        return this.replicatedPolicies.contains(policy) ? this.replicatedWrites : null;
    }

    /** Whether acquires that wait at the same moment are sent together ({@link DecisionBatches}). */
    boolean batching() {
        return this.batching;
    }

    /** The masters of a Redis Cluster; null for standalone and Sentinel. */
    @Nullable
    ClusterNodes clusterNodes() {
        return this.clusterNodes;
    }

    /** A call failed: on a Redis Cluster, its topology may have changed (a replica promoted). */
    void callFailed() {
        ClusterNodes nodes = this.clusterNodes;
        if (nodes != null) {
            nodes.callFailed();
        }
    }

    String keyPrefix() {
        return this.keyPrefix;
    }

    Duration timeout() {
        return this.timeout;
    }

    /** The store's connection ({@link StoreConnection#get}). */
    Mono<ReactiveRedisConnection> connection() {
        return this.connection.get();
    }

    /**
     * A call to Redis, with the caller's trace (a decision's observation) as its commands' parent
     * ({@link CallerTrace}); on the caller's thread, as the call is made.
     */
    <T> Mono<T> traced(Mono<T> call) {
        return this.trace.around(call);
    }

    /** Obtains the connection again at the next call ({@link StoreConnection#failed}). */
    void connectionFailed() {
        this.connection.failed();
    }

    /** The {@code now} argument of a script: empty (use Redis TIME) or the override clock's reading. */
    ByteBuffer nowArgument() {
        TimeSource clock = this.clock;
        return (clock != null)
                ? ByteBuffer.wrap(Long.toString(clock.currentTimeMillis()).getBytes(StandardCharsets.US_ASCII))
                : REDIS_TIME;
    }

    /**
     * The application's time, around which a calendar window's boundaries are computed: the script
     * still decides by its own {@code now} (see fixed_window_calendar.lua).
     */
    long applicationTime() {
        return this.applicationClock.currentTimeMillis();
    }

    /**
     * Whether this store hears other instances' events, so that its near cache may answer: not before
     * the channel is first subscribed, and never without a subscription (a connection factory that is
     * not a {@code RedisConnectionFactory}): a refusal another instance's reset made untrue would
     * otherwise be repeated until its time.
     */
    boolean hearsEvents() {
        RedisThrottleEvents events = this.events;
        return events != null && events.isListening();
    }

    /** Deletes a key and publishes that it was reset, in one script; only with a near cache. */
    Mono<Void> resetAndPublish(ByteBuffer redisKey, String policy, String key) {
        ByteBuffer message = RedisThrottleEvents.keyMessage(this.sender, policy, key);
        ByteBuffer channel = this.channel.duplicate();
        return traced(connection()
                .flatMap((connection) -> connection
                        .scriptingCommands()
                        .eval(RESET_SCRIPT.duplicate(), ReturnType.INTEGER, 1, redisKey, channel, message)
                        .then()));
    }

    /** Publishes that a key of a policy was reset or given back ({@link #publish}). */
    Mono<Void> publishKey(String policy, String key) {
        return publish(RedisThrottleEvents.keyMessage(this.sender, policy, key));
    }

    /** Publishes that a policy's numbers changed ({@link #publish}). */
    Mono<Void> publishPolicy(String policy) {
        return publish(RedisThrottleEvents.policyMessage(this.sender, policy));
    }

    /**
     * Publishes an event on {@code <key-prefix>:events} when the store has a near cache (every
     * instance's may hold the key); completes at once otherwise.
     */
    private Mono<Void> publish(ByteBuffer message) {
        ByteBuffer channel = this.channel;
        if (channel == null) {
            return Mono.empty();
        }
        ByteBuffer target = channel.duplicate();
        return traced(connection()
                .flatMap((connection) -> connection.pubSubCommands().publish(target, message))
                .then());
    }

    /** {@code RedisThrottleStore.serverTimeRefusal}: Redis's error when it refused TIME in a script, else null. */
    @Nullable
    String serverTimeRefusal(Duration bound) {
        ByteBuffer script = ByteBuffer.wrap("return redis.call('TIME')".getBytes(StandardCharsets.US_ASCII));
        try {
            connection()
                    .flatMap((connection) -> connection
                            .scriptingCommands()
                            .eval(script, ReturnType.MULTI, 0)
                            .collectList())
                    .block(bound);
            return null;
        } catch (RuntimeException ex) {
            for (Throwable cause = ex; cause != null; cause = cause.getCause()) {
                if (cause instanceof io.lettuce.core.RedisCommandExecutionException) {
                    return cause.getMessage();
                }
            }
            return null;
        }
    }
}
