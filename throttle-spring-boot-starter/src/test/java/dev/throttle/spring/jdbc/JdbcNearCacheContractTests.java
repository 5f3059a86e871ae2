package dev.throttle.spring.jdbc;

import dev.throttle.ThrottleStore;
import dev.throttle.TimeSource;
import dev.throttle.testing.ThrottleStoreContract;
import dev.throttle.testing.jdbc.SharedPostgres;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * The whole store contract, unchanged, on the jdbc store with its near cache answering every refusal
 * of 1 ms or more: every trace gets the same decisions as from the memory store, so a remembered
 * refusal says what PostgreSQL would say at that moment (counted on the suite's manual clock, which
 * the functions are handed too), and resets and refunds forget it.
 */
class JdbcNearCacheContractTests extends ThrottleStoreContract {

    @Override
    protected ThrottleStore createStore(TimeSource clock) {
        SharedPostgres.clear();
        JdbcThrottleStore store = new JdbcThrottleStore(
                SharedPostgres.dataSource(),
                "throttle_",
                Duration.ofSeconds(30),
                8,
                clock,
                null,
                0,
                JdbcNearCacheSettings.of(10_000, Duration.ofMillis(1), Set.of()));
        store.eventsHeard().orTimeout(10, TimeUnit.SECONDS).join();
        return store;
    }
}
