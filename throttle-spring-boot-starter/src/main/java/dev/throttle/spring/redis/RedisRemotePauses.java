package dev.throttle.spring.redis;

import dev.throttle.spring.client.RemotePauses;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import org.springframework.data.redis.connection.RedisStringCommands;
import org.springframework.data.redis.core.types.Expiration;

/**
 * Remote pauses in Redis, on the store's own connection, prefix and timeout: one key per paused
 * client key ({@code <prefix>:{pause:<client>:<key>}}), written with {@code SET ... PX} and read with
 * {@code PTTL}, so that the pause ends by Redis's clock for every instance at once and the key goes
 * with it. A read is one extra round trip per call, and only for clients that honour remote limits;
 * the decision's script is left as it is, so the contract of the stores does not change for a
 * feature most policies never use.
 */
final class RedisRemotePauses implements RemotePauses {

    private static final ByteBuffer PAUSED = ByteBuffer.wrap(new byte[] {'1'});

    private final StoreConnection connection;

    private final String keyPrefix;

    private final Duration timeout;

    RedisRemotePauses(StoreConnection connection, String keyPrefix, Duration timeout) {
        this.connection = connection;
        this.keyPrefix = keyPrefix;
        this.timeout = timeout;
    }

    @Override
    public CompletionStage<Long> remainingMillis(String client, String key) {
        ByteBuffer redisKey = key(client, key);
        return this.connection
                .get()
                .flatMap((redis) -> redis.keyCommands().pTtl(redisKey))
                // -2: no such key (not paused); -1: no expiry, which this never writes
                .map((left) -> Math.max(0L, left))
                .defaultIfEmpty(0L)
                .timeout(this.timeout)
                .doOnError((error) -> this.connection.failed())
                .toFuture();
    }

    @Override
    public CompletionStage<Void> pause(String client, String key, long millis) {
        ByteBuffer redisKey = key(client, key);
        return this.connection
                .get()
                .flatMap((redis) -> redis.stringCommands()
                        .set(
                                redisKey,
                                PAUSED.duplicate(),
                                Expiration.milliseconds(Math.max(1, millis)),
                                RedisStringCommands.SetOption.upsert()))
                .timeout(this.timeout)
                .doOnError((error) -> this.connection.failed())
                .then()
                .toFuture();
    }

    /** The pause's key; its own hash tag, since it is read alone. */
    String redisKey(String client, String key) {
        return this.keyPrefix + ":{pause:" + client + ":" + key + "}";
    }

    private ByteBuffer key(String client, String key) {
        return ByteBuffer.wrap(redisKey(client, key).getBytes(StandardCharsets.UTF_8));
    }
}
