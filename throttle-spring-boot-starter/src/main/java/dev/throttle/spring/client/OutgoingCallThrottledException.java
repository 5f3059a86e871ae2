package dev.throttle.spring.client;

import dev.throttle.Decision;
import dev.throttle.Policy;
import dev.throttle.ThrottledException;

/**
 * Thrown, before anything is sent, by an outgoing call that could not get its turn within its
 * client's {@code wait}: its policy had no room in time, or the remote asked the client to pause for
 * longer ({@link #isRemotePause()}). The starter's web layer answers it {@code 503 Service Unavailable}
 * with {@code Retry-After}: the application's dependency is busy; the caller did nothing wrong.
 */
public class OutgoingCallThrottledException extends ThrottledException {

    private static final long serialVersionUID = 1L;

    private final String client;

    private final boolean remotePause;

    /**
     * Creates a refusal of an outgoing call.
     * @param client the client's name ({@code throttle.clients.<name>})
     * @param policy the client's policy
     * @param decision the refusal: its retry-after is when the call could be sent
     * @param remotePause whether the remote's own limit (a pause it asked for) refused the call
     */
    public OutgoingCallThrottledException(String client, Policy policy, Decision decision, boolean remotePause) {
        super(policy, decision);
        this.client = client;
        this.remotePause = remotePause;
    }

    /**
     * Returns the client whose call was not sent.
     * @return the client's name
     */
    public String getClient() {
        return this.client;
    }

    /**
     * Whether the remote asked for the pause that refused the call (a 429 or 503 with
     * {@code Retry-After}, or rate-limit headers saying nothing is left), rather than the client's
     * own policy.
     * @return whether a remote pause refused it
     */
    public boolean isRemotePause() {
        return this.remotePause;
    }

    @Override
    public String getMessage() {
        return "Outgoing call of client '" + this.client + "' not sent: "
                + (this.remotePause
                        ? "the remote asked to pause"
                        : "policy '" + getPolicy().name() + "' had no turn within the client's wait")
                + "; retry after " + getDecision().retryAfterSeconds() + "s";
    }
}
