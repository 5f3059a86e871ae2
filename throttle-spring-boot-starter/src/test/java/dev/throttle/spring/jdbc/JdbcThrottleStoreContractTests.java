package dev.throttle.spring.jdbc;

import dev.throttle.ThrottleStore;
import dev.throttle.TimeSource;
import dev.throttle.testing.ThrottleStoreContract;
import dev.throttle.testing.jdbc.SharedPostgres;
import java.time.Duration;

/**
 * The jdbc store keeps the same contract as the memory and Redis stores, unchanged, against a real
 * PostgreSQL: the functions are handed the suite's manual clock as their {@code now}.
 */
class JdbcThrottleStoreContractTests extends ThrottleStoreContract {

    @Override
    protected ThrottleStore createStore(TimeSource clock) {
        SharedPostgres.clear();
        // generous timeout: the concurrency traces run 8 threads on 2 shared cores
        return new JdbcThrottleStore(
                SharedPostgres.dataSource(), "throttle_", Duration.ofSeconds(5), 8, clock, null, 0);
    }
}
