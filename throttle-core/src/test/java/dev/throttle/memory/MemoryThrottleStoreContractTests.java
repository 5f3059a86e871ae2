package dev.throttle.memory;

import dev.throttle.ThrottleStore;
import dev.throttle.TimeSource;
import dev.throttle.testing.ThrottleStoreContract;

/**
 * The memory store keeps the store contract.
 */
class MemoryThrottleStoreContractTests extends ThrottleStoreContract {

    @Override
    protected ThrottleStore createStore(TimeSource clock) {
        return new MemoryThrottleStore(clock, MemoryThrottleStore.DEFAULT_MAXIMUM_KEYS);
    }
}
