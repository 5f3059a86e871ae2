package dev.throttle.resilience;

import dev.throttle.ThrottleStore;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.testing.ThrottleStoreContract;

/**
 * While its store answers, the failure policy is invisible: wrapped, a store keeps the store
 * contract exactly.
 */
class ResilientThrottleStoreContractTests extends ThrottleStoreContract {

    @Override
    protected ThrottleStore createStore(TimeSource clock) {
        return new ResilientThrottleStore(
                new MemoryThrottleStore(clock, MemoryThrottleStore.DEFAULT_MAXIMUM_KEYS),
                FailureMode.LOCAL,
                new MemoryThrottleStore(clock, 100));
    }
}
