package dev.throttle.spring.bans;

import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * Where the active bans of a fleet live: a store every instance reaches (Redis), which keeps each
 * ban until it ends and tells every instance when one starts or is lifted. Implementations are
 * thread-safe, and never make a caller wait on the store in {@link #save} or {@link #lift}.
 */
public interface SharedBans {

    /**
     * Stores a ban until it ends (or keeps the later end of the key's stored ban) and tells every
     * instance.
     * @param ban the ban
     * @param nowMillis the moment, in epoch milliseconds, before which bans have ended (and may be dropped)
     * @return completes when the store took it
     */
    CompletionStage<Void> save(ActiveBan ban, long nowMillis);

    /**
     * Removes a ban and tells every instance.
     * @param ban the ban's name
     * @param key the banned key
     * @return completes when the store took it
     */
    CompletionStage<Void> lift(String ban, String key);

    /**
     * Reads every ban that has not ended.
     * @param nowMillis the moment, in epoch milliseconds, before which a ban has ended
     * @return the bans, in no particular order
     * @throws RuntimeException when the store cannot be read
     */
    List<ActiveBan> loadAll(long nowMillis);

    /**
     * Starts telling {@code listener} about bans started and lifted by any instance, and about a
     * moment at which some may have been missed (the channel was lost and is back).
     * @param listener what hears the bans
     */
    void listen(Listener listener);

    /** Stops listening. */
    void close();

    /** Hears the bans of a fleet. */
    interface Listener {

        /**
         * A ban started (or was extended).
         * @param ban the ban
         */
        void started(ActiveBan ban);

        /**
         * A ban was lifted.
         * @param ban the ban's name
         * @param key the key
         */
        void lifted(String ban, String key);

        /** Bans may have been missed: read them all again. */
        void reconnected();
    }
}
