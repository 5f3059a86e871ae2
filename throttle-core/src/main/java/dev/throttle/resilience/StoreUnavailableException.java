package dev.throttle.resilience;

/**
 * The store is known to be down (an earlier call failed and no probe has succeeded since), so a
 * call was answered by the failure mode without trying the store. Its cause is the failure that
 * started the outage. Carries no stack trace: it is created once per outage and reported per call.
 */
public class StoreUnavailableException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     * @param message what is down
     * @param cause the failure that started the outage
     */
    public StoreUnavailableException(String message, Throwable cause) {
        super(message, cause, false, false);
    }
}
