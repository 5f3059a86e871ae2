package dev.throttle.spring.redis;

import dev.throttle.FixedWindowPolicy;
import dev.throttle.Policy;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.StringJoiner;
import org.jspecify.annotations.Nullable;
import org.springframework.data.redis.connection.ReactiveRedisConnection;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.data.redis.core.script.RedisScript;
import reactor.core.publisher.Mono;

/**
 * One policy's script and keys: a call is one {@code EVALSHA} of the script (its numbers are part of
 * its text, see {@link RedisThrottleScripts}) with the key and {@code ARGV = operation, cost, now} and,
 * for a refund of one call, that call's receipt; {@code EVAL} when Redis lost the script. Unbounded:
 * the limiter bounds every call ({@link CallBounds}). Thread-safe.
 */
final class PolicyScript {

    static final byte[] ACQUIRE = {'a'};

    static final byte[] REFUND = {'r'};

    static final byte[] PEEK = {'p'};

    /** A reservation: an acquire that may wait for its turn, its longest wait as the fourth argument. */
    static final byte[] RESERVE = {'w'};

    /** A charge of a cost known after the call: the units as the cost, the debt bound as the fourth argument. */
    static final byte[] CHARGE = {'c'};

    /** An empty fourth argument, before a calendar window's boundaries. */
    private static final byte[] NONE = {};

    /** The costs a call usually has, as the digits sent: none of them encoded per call. */
    private static final byte[][] COSTS = new byte[65][];

    static {
        for (int cost = 0; cost < COSTS.length; cost++) {
            COSTS[cost] = ascii(Integer.toString(cost));
        }
    }

    private final RedisCalls calls;

    private final String sha1;

    private final byte[] scriptBytes;

    /** {@code <prefix>:{<policy>:} as text; a key completes it with {@code <key>}}. */
    private final String keyStart;

    /** A fixed window of the calendar's boundaries around the application's time; null for other policies. */
    private final @Nullable CalendarBoundaries calendar;

    PolicyScript(RedisCalls calls, Policy policy) {
        this.calls = calls;
        this.calendar = (policy instanceof FixedWindowPolicy window && window.calendar() != null)
                ? new CalendarBoundaries(window)
                : null;
        @SuppressWarnings("rawtypes")
        RedisScript<List> script = RedisThrottleScripts.of(policy);
        this.sha1 = script.getSha1();
        this.scriptBytes = script.getScriptAsString().getBytes(StandardCharsets.UTF_8);
        this.keyStart = keyStart(calls.keyPrefix(), policy.name());
    }

    /** {@code <prefix>:{<policy>:}: what every Redis key of a policy starts with. */
    static String keyStart(String keyPrefix, String policy) {
        return keyPrefix + ":{" + policy + ":";
    }

    /**
     * The Redis key of a policy's key: {@code <prefix>:{<policy>:<key>}}, hashed by Redis Cluster on
     * {@code <policy>:<key>}.
     * @param keyStart the policy's {@link #keyStart(String, String)}
     * @param key the key, as the throttler normalized it
     * @return the Redis key
     */
    static String redisKey(String keyStart, String key) {
        return keyStart + key + "}";
    }

    /** The bytes left in {@code buffer}, copied (the buffer is left as it was). */
    static byte[] bytes(ByteBuffer buffer) {
        byte[] bytes = new byte[buffer.remaining()];
        buffer.duplicate().get(bytes);
        return bytes;
    }

    static byte[] ascii(String text) {
        return text.getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * The script's text, for loading it ahead of the first call.
     * @return the script's text as UTF-8
     */
    byte[] scriptBytes() {
        return this.scriptBytes;
    }

    /** The Redis key of {@code key}: {@code <prefix>:{<policy>:<key>}}. */
    ByteBuffer redisKey(String key) {
        return ByteBuffer.wrap(redisKeyBytes(key));
    }

    private byte[] redisKeyBytes(String key) {
        return redisKey(this.keyStart, key).getBytes(StandardCharsets.UTF_8);
    }

    /**
     * One EVALSHA (EVAL when Redis lost the script) of the policy's script; {@code receipt} may be
     * null. Made on the caller's thread, whose trace becomes the commands' parent.
     */
    Mono<List<Object>> eval(String key, byte[] operation, int cost, byte @Nullable [] receipt) {
        byte[] keyBytes = redisKeyBytes(key);
        ByteBuffer now = this.calls.nowArgument();
        CalendarBoundaries calendar = this.calendar;
        byte[] boundaries = (calendar != null) ? calendar.argument(this.calls.applicationTime()) : null;
        return this.calls.traced(this.calls
                .connection()
                .flatMap((connection) -> evalSha(connection, keyBytes, operation, cost, now, receipt, boundaries)
                        .onErrorResume(
                                PolicyScript::isNoScript,
                                (ex) -> connection
                                        .scriptingCommands()
                                        .<Object>eval(
                                                ByteBuffer.wrap(this.scriptBytes),
                                                ReturnType.MULTI,
                                                1,
                                                keysAndArgs(keyBytes, operation, cost, now, receipt, boundaries))
                                        .collectList())));
    }

    /**
     * The script through the connection of the writes that wait for a replica
     * ({@link ReplicatedWrites}): the same keys and arguments as {@link #eval}.
     */
    Mono<List<Object>> evalReplicated(
            ReplicatedWrites writes, String key, byte[] operation, int cost, byte @Nullable [] receipt) {
        ByteBuffer now = this.calls.nowArgument();
        CalendarBoundaries calendar = this.calendar;
        byte[] boundaries = (calendar != null) ? calendar.argument(this.calls.applicationTime()) : null;
        ByteBuffer[] keysAndArgs = keysAndArgs(redisKeyBytes(key), operation, cost, now, receipt, boundaries);
        byte[][] args = new byte[keysAndArgs.length - 1][];
        for (int i = 1; i < keysAndArgs.length; i++) {
            args[i - 1] = bytes(keysAndArgs[i]);
        }
        return this.calls.traced(writes.eval(this.sha1, this.scriptBytes, bytes(keysAndArgs[0]), args));
    }

    private Mono<List<Object>> evalSha(
            ReactiveRedisConnection connection,
            byte[] keyBytes,
            byte[] operation,
            int cost,
            ByteBuffer now,
            byte @Nullable [] receipt,
            byte @Nullable [] boundaries) {
        return connection
                .scriptingCommands()
                .<Object>evalSha(
                        this.sha1,
                        ReturnType.MULTI,
                        1,
                        keysAndArgs(keyBytes, operation, cost, now, receipt, boundaries))
                .collectList();
    }

    /** The key and ARGV; a calendar window's boundaries are ARGV[5], after its fourth argument or an empty one. */
    private static ByteBuffer[] keysAndArgs(
            byte[] key,
            byte[] operation,
            int cost,
            ByteBuffer now,
            byte @Nullable [] receipt,
            byte @Nullable [] boundaries) {
        ByteBuffer costArgument = costArgument(cost);
        if (boundaries != null) {
            return new ByteBuffer[] {
                ByteBuffer.wrap(key),
                ByteBuffer.wrap(operation),
                costArgument,
                now.duplicate(),
                ByteBuffer.wrap((receipt != null) ? receipt : NONE),
                ByteBuffer.wrap(boundaries)
            };
        }
        if (receipt == null) {
            return new ByteBuffer[] {ByteBuffer.wrap(key), ByteBuffer.wrap(operation), costArgument, now.duplicate()};
        }
        return new ByteBuffer[] {
            ByteBuffer.wrap(key), ByteBuffer.wrap(operation), costArgument, now.duplicate(), ByteBuffer.wrap(receipt)
        };
    }

    /** A cost as the digits sent, not encoded per call for the usual costs. */
    static ByteBuffer costArgument(int cost) {
        return ByteBuffer.wrap((cost < COSTS.length) ? COSTS[cost] : ascii(Integer.toString(cost)));
    }

    /** Whether Redis answered that it does not have the script (it restarted, or was flushed): send its text. */
    static boolean isNoScript(Throwable ex) {
        for (Throwable cause = ex; cause != null; cause = cause.getCause()) {
            String message = cause.getMessage();
            if (message != null && message.contains("NOSCRIPT")) {
                return true;
            }
        }
        return false;
    }

    /**
     * The fifth argument of a fixed window of the calendar: the boundaries around the application's
     * time ({@link FixedWindowPolicy#boundaries}), from which the script picks the window holding its
     * own now (fixed_window_calendar.lua says why). Computed when the application's time leaves the
     * window they were computed in, so a call makes no dates; the table kept is immutable, and two
     * threads that find it stale compute the same one.
     */
    static final class CalendarBoundaries {

        private final FixedWindowPolicy policy;

        private volatile Table table = new Table(0, 0, NONE);

        CalendarBoundaries(FixedWindowPolicy policy) {
            this.policy = policy;
        }

        /** The boundaries around {@code now}, as ASCII digits joined by {@code ,}. */
        byte[] argument(long now) {
            Table table = this.table;
            if (now < table.from || now >= table.to) {
                long[] boundaries = this.policy.boundaries(now);
                StringJoiner text = new StringJoiner(",");
                for (long boundary : boundaries) {
                    text.add(Long.toString(boundary));
                }
                table = new Table(boundaries[2], boundaries[3], ascii(text.toString()));
                this.table = table;
            }
            return table.argument;
        }

        /** The argument computed for the window from {@code from} to {@code to}. */
        private record Table(long from, long to, byte[] argument) {}
    }
}
