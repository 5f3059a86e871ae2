package dev.throttle.testing.redis;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.sync.RedisCommands;
import java.util.ArrayList;
import java.util.List;

/**
 * The keys of a Redis matching a pattern, through {@code SCAN}: Lettuce 7 (Boot 4.1) and Lettuce 6
 * (Boot 4.0, whose tests rerun this test-jar) differ in {@code keys(pattern)}'s signature, not in
 * {@code scan}'s.
 */
public final class RedisKeys {

    private RedisKeys() {}

    /**
     * Returns every key matching {@code pattern}.
     * @param redis the commands of a connection
     * @param pattern a glob-style pattern, as for {@code KEYS}
     * @return the keys, in no particular order
     */
    public static List<String> matching(RedisCommands<String, String> redis, String pattern) {
        List<String> keys = new ArrayList<>();
        ScanArgs args = ScanArgs.Builder.matches(pattern).limit(1000);
        KeyScanCursor<String> cursor = redis.scan(args);
        keys.addAll(cursor.getKeys());
        while (!cursor.isFinished()) {
            cursor = redis.scan(ScanCursor.of(cursor.getCursor()), args);
            keys.addAll(cursor.getKeys());
        }
        return keys;
    }
}
