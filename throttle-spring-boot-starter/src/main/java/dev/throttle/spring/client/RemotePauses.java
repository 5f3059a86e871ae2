package dev.throttle.spring.client;

import dev.throttle.TimeSource;
import java.util.concurrent.CompletionStage;

/**
 * Where the pauses a remote asked for are kept, per client and key, so that every instance sharing
 * the store honours them: a map in memory, or one Redis key per paused client key (written with
 * {@code SET ... PX}, read with {@code PTTL}, so that Redis's own clock ends the pause). Apart from
 * the policy's state on purpose: a pause is the remote's word, its length whatever the remote said,
 * and no algorithm's numbers could say it exactly (an emptied bucket refills in steps of its rate).
 *
 * <p>The last pause written for a key wins, even when it is shorter: the remote's latest answer is
 * the best it knows. Both operations never block the calling thread beyond the store's own bound;
 * a store that fails answers "not paused", so that a lost pause costs at worst one more call the
 * remote refuses.
 */
public interface RemotePauses {

    /**
     * How long the key is still paused.
     * @param client the client's name
     * @param key the client's key
     * @return completes with the milliseconds left, 0 when not paused
     */
    CompletionStage<Long> remainingMillis(String client, String key);

    /**
     * Pauses the key.
     * @param client the client's name
     * @param key the client's key
     * @param millis how long, at least 1
     * @return completes when the pause is stored
     */
    CompletionStage<Void> pause(String client, String key, long millis);

    /**
     * Pauses kept in this JVM's memory: shared by the clients of one application only.
     * @param clock the application's clock
     * @return the pauses
     */
    static RemotePauses inMemory(TimeSource clock) {
        return new MemoryRemotePauses(clock);
    }
}
