package dev.throttle.spring.client;

/**
 * Hears what the throttled clients do, for metrics: each call sent or refused, each pause a remote
 * asked for, each wait for a remote's pause to end. Called on the caller's thread or a store's I/O
 * thread: must be quick and must not throw.
 */
public interface OutgoingCallListener {

    /** What happened to an outgoing call. */
    enum Outcome {

        /** Sent, at once or after its wait. */
        SENT,

        /** Not sent: its policy had no turn within the client's wait. */
        REFUSED,

        /** Not sent: the remote's pause lasts longer than the client's wait. */
        PAUSED
    }

    /** Hears nothing. */
    OutgoingCallListener NONE = new OutgoingCallListener() {};

    /**
     * Hears a call decided.
     * @param client the client's name
     * @param policy the client's policy
     * @param outcome what happened to it
     */
    default void onCall(String client, String policy, Outcome outcome) {}

    /**
     * Hears a remote asking for a pause.
     * @param client the client's name
     * @param millis how long the key is paused
     */
    default void onRemotePause(String client, long millis) {}

    /**
     * Hears a call about to wait for a remote's pause to end (its policy's own waits are heard by
     * the throttler's listeners).
     * @param client the client's name
     * @param policy the client's policy
     * @param millis how long it waits
     */
    default void onPauseWait(String client, String policy, long millis) {}
}
