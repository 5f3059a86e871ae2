package dev.throttle.resilience;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.BoundPolicy;
import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Limiter;
import dev.throttle.ManualTimeSource;
import dev.throttle.Policy;
import dev.throttle.ThrottleStore;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.testing.ForwardingLimiter;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A call whose caller's thread was interrupted while it waited for the store (a request cancelled, an
 * executor shut down) is answered by the failure mode, but is no failure of the store: the other
 * calls keep deciding on it.
 */
class ResilientInterruptedCallsTests {

    private static final FixedWindowPolicy API = new FixedWindowPolicy("api", 5, Duration.ofHours(1));

    private final ManualTimeSource clock = new ManualTimeSource();

    private final MemoryThrottleStore primary = new MemoryThrottleStore(this.clock, 1_000);

    private final ResilientThrottleStore store = new ResilientThrottleStore(
            new Interrupting(this.primary), FailureMode.LOCAL, new MemoryThrottleStore(this.clock, 1_000), this.clock);

    @AfterEach
    void close() {
        this.store.close();
    }

    @Test
    void anInterruptedCallIsAnsweredByTheFailureModeWithoutAnOutage() {
        BoundPolicy api = new Throttler(this.store, List.of(API)).bound("api");
        assertThat(api.tryAcquire("interrupted", 1).allowed()).isTrue();
        assertThat(this.primary.limiter(API).peek("interrupted").remaining())
                .as("answered by the failure mode, not the store")
                .isEqualTo(5);
        assertThat(this.store.isStoreDown()).as("the store did not fail").isFalse();
        assertThat(api.tryAcquire("alice", 1).allowed()).isTrue();
        assertThat(this.primary.limiter(API).peek("alice").remaining())
                .as("the next call decides on the store")
                .isEqualTo(4);
    }

    /** A store whose calls for the key "interrupted" fail as a store's call does when its caller is interrupted. */
    private static final class Interrupting implements ThrottleStore {

        private final ThrottleStore store;

        Interrupting(ThrottleStore store) {
            this.store = store;
        }

        @Override
        public Limiter limiter(Policy policy) {
            Limiter limiter = this.store.limiter(policy);
            return new ForwardingLimiter(limiter) {

                @Override
                public Decision tryAcquire(String key, int cost) {
                    if (key.equals("interrupted")) {
                        throw new IllegalStateException("tryAcquire failed", new InterruptedException());
                    }
                    return super.tryAcquire(key, cost);
                }
            };
        }

        @Override
        public String kind() {
            return this.store.kind();
        }
    }
}
