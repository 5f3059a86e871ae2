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
        // The timeout bounds a call to a database that stopped answering, which no contract test
        // has; a call of a concurrency trace (8 threads and their 8 backends on 2 shared cores, a CI
        // build beside them) was measured at up to 2 s on the server alone, and one waited past 5 s
        // in a CI run: generous, so that a slow answer is waited for, as the counts are what is proven.
        return new JdbcThrottleStore(
                SharedPostgres.dataSource(), "throttle_", Duration.ofSeconds(30), 8, clock, null, 0);
    }
}
