package dev.throttle.mapstore;

import dev.throttle.ThrottleStore;
import dev.throttle.TimeSource;
import dev.throttle.testing.ThrottleStoreContract;

/**
 * A store written only in test code, over the algorithms' Java transitions and public types alone,
 * keeps the whole store contract: a store needs nothing from an algorithm but its transition.
 */
class MapThrottleStoreContractTests extends ThrottleStoreContract {

    @Override
    protected ThrottleStore createStore(TimeSource clock) {
        return new MapThrottleStore(clock);
    }
}
