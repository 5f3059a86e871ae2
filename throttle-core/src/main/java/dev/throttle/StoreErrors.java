package dev.throttle;

/**
 * Tells every listener of a {@link Throttler} about the store errors that a store (a failure
 * policy) reports: the listener a throttler hands its store when it binds a policy.
 */
final class StoreErrors implements ThrottleListener {

    private final ThrottleListener[] listeners;

    StoreErrors(ThrottleListener[] listeners) {
        this.listeners = listeners;
    }

    @Override
    public void onStoreError(Policy policy, RuntimeException error) {
        for (ThrottleListener listener : this.listeners) {
            listener.onStoreError(policy, error);
        }
    }
}
