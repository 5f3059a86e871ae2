package dev.throttle.spring.fleet;

import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Where the policy changes of a fleet live: a store every instance reaches (Redis), which numbers each
 * change and tells every instance about it. Implementations are thread-safe.
 */
public interface SharedPolicyChanges {

    /**
     * Stores a change, numbered after every change stored before it, and tells every instance.
     * @param policy the policy's name
     * @param settings the settings that differ from the configuration, or null to revert to it
     * @param by who makes the change
     * @return the change as stored
     * @throws RuntimeException when the store cannot take it (nothing changed)
     */
    StoredPolicyChange save(String policy, @Nullable Map<String, String> settings, String by);

    /**
     * Reads the stored change of every policy that has one.
     * @return the changes, in no particular order
     * @throws RuntimeException when the store cannot be read
     */
    List<StoredPolicyChange> loadAll();

    /**
     * Starts telling {@code listener} about changes: each one stored by any instance, and a moment at
     * which changes may have been missed (the channel was lost and is back), when every stored
     * change should be read again.
     * @param listener what hears the changes
     */
    void listen(Listener listener);

    /** Stops listening. */
    void close();

    /** Hears changes of the fleet's policies. */
    interface Listener {

        /**
         * A policy's stored change may be newer than the one applied.
         * @param policy the policy's name
         */
        void changed(String policy);

        /** Changes may have been missed: read them all again. */
        void reconnected();
    }
}
