package dev.throttle.spring.client;

import dev.throttle.TimeSource;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;

/** Pauses in a map of end times, read from the application's clock; ended pauses are dropped when seen. */
final class MemoryRemotePauses implements RemotePauses {

    /** Above this many paused keys, a new pause first drops those that ended (keys come from callers). */
    private static final int SWEEP_ABOVE = 10_000;

    private static final CompletionStage<Long> NOT_PAUSED = CompletableFuture.completedStage(0L);

    private static final CompletionStage<Void> DONE = CompletableFuture.completedStage(null);

    private final ConcurrentHashMap<String, Long> until = new ConcurrentHashMap<>();

    private final TimeSource clock;

    MemoryRemotePauses(TimeSource clock) {
        this.clock = clock;
    }

    @Override
    public CompletionStage<Long> remainingMillis(String client, String key) {
        String id = id(client, key);
        Long end = this.until.get(id);
        if (end == null) {
            return NOT_PAUSED;
        }
        long left = end - this.clock.currentTimeMillis();
        if (left <= 0) {
            this.until.remove(id, end);
            return NOT_PAUSED;
        }
        return CompletableFuture.completedStage(left);
    }

    @Override
    public CompletionStage<Void> pause(String client, String key, long millis) {
        long now = this.clock.currentTimeMillis();
        if (this.until.size() > SWEEP_ABOVE) {
            this.until.values().removeIf((end) -> end <= now);
        }
        this.until.put(id(client, key), now + millis);
        return DONE;
    }

    private static String id(String client, String key) {
        return client + '\u0000' + key;
    }
}
