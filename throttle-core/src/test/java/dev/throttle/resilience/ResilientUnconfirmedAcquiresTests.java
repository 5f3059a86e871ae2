package dev.throttle.resilience;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.BoundPolicy;
import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Limiter;
import dev.throttle.LockoutPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.Policy;
import dev.throttle.ThrottleStore;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.testing.Eventually;
import dev.throttle.testing.FlakyStore;
import dev.throttle.testing.ForwardingLimiter;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A store whose acquires count only once it confirms them ({@code durability: replicated} on Redis):
 * every call the failure mode allows in its place is kept for it, in order with the resets made
 * meanwhile, and applied to it when it answers again; a refusal took nothing and is not kept. A store
 * that does not ask for it is given none.
 */
class ResilientUnconfirmedAcquiresTests {

    private static final FixedWindowPolicy API = new FixedWindowPolicy("api", 5, Duration.ofHours(1));

    private static final LockoutPolicy LOGIN = LockoutPolicy.of("login", List.of(Duration.ofHours(1)));

    private final ManualTimeSource clock = new ManualTimeSource();

    /** The state the store holds, looked at directly. */
    private final MemoryThrottleStore primary = new MemoryThrottleStore(this.clock, 100_000);

    private final MemoryThrottleStore local = new MemoryThrottleStore(this.clock, 100_000);

    private FlakyStore flaky;

    private ResilientThrottleStore store;

    @AfterEach
    void close() {
        this.store.close();
    }

    private Throttler throttler(boolean keepsUnconfirmed) {
        this.flaky = new FlakyStore(new RecordingStore(this.primary, keepsUnconfirmed), "flaky");
        this.store = new ResilientThrottleStore(this.flaky, FailureMode.LOCAL, this.local, this.clock);
        return new Throttler(this.store, List.of(API, LOGIN));
    }

    private void storeComesBack(BoundPolicy any) {
        this.flaky.comeBack();
        Eventually.until("the store answers again and is given what it is owed", () -> {
            any.tryAcquire("\u0000probe:traffic", 1);
            return !this.store.isStoreDown();
        });
    }

    @Test
    void theCallsTheFailureModeAllowsCountInTheStoreOnceItAnswersAndItsRefusalsDoNot() {
        BoundPolicy api = throttler(true).bound("api");
        assertThat(api.tryAcquire("alice", 1).allowed()).isTrue();
        this.flaky.goDown();
        int allowed = 0;
        for (int i = 0; i < 8; i++) {
            allowed += api.tryAcquire("alice", 1).allowed() ? 1 : 0;
        }
        assertThat(allowed).as("the local store's own limit").isEqualTo(5);

        storeComesBack(api);
        assertThat(this.primary.limiter(API).peek("alice").remaining())
                .as("one taken before the outage and the five allowed during it; the three refused took nothing")
                .isZero();
        assertThat(this.primary.limiter(API).tryAcquire("alice", 1).allowed()).isFalse();
    }

    @Test
    void aLockoutAndAnUnlockMadeDuringAnOutageHoldInTheStoreAfterwardsInTheOrderMade() {
        BoundPolicy login = throttler(true).bound("login");
        assertThat(login.tryAcquire("carol", 1).allowed()).isTrue();
        this.flaky.goDown();
        assertThat(login.tryAcquire("mallory", 1).allowed()).isTrue();
        assertThat(login.tryAcquire("mallory", 1).allowed())
                .as("locked out here")
                .isFalse();
        login.reset("carol");
        assertThat(login.tryAcquire("carol", 1).allowed())
                .as("carol again, after her unlock")
                .isTrue();

        storeComesBack(login);
        assertThat(this.primary.limiter(LOGIN).peek("mallory").allowed())
                .as("mallory's lockout holds in the store")
                .isFalse();
        assertThat(this.primary.limiter(LOGIN).peek("carol").allowed())
                .as("carol's attempt after her unlock counts after it, not before")
                .isFalse();
    }

    @Test
    void anOutageEndsOnlyWhenTheStoreConfirmsAgainWhicheverPolicyStartsTheProbes() throws Exception {
        this.flaky = new FlakyStore(this.primary, "flaky");
        Confirming confirming = new Confirming(this.flaky, LOGIN.name());
        // closed: nothing is kept for the store, so no owed acquire holds the outage open by failing
        this.store = new ResilientThrottleStore(confirming, FailureMode.CLOSED, this.local, this.clock);
        Throttler throttler = new Throttler(this.store, List.of(API, LOGIN));
        BoundPolicy login = throttler.bound("login");
        BoundPolicy api = throttler.bound("api");
        confirming.confirms = false;
        assertThat(login.tryAcquire("mallory", 1).allowed())
                .as("refused by the failure mode")
                .isFalse();
        assertThat(this.store.isStoreDown()).isTrue();

        // the other policy's writes would succeed, but probes go through the policy that needs them confirmed
        for (int i = 0; i < 20; i++) {
            api.tryAcquire("alice", 1);
            Thread.sleep(10);
            assertThat(this.store.isStoreDown())
                    .as("still down while nothing is confirmed")
                    .isTrue();
        }

        confirming.confirms = true;
        storeComesBack(api);
        assertThat(login.tryAcquire("mallory", 1).allowed())
                .as("decided by the store again")
                .isTrue();
    }

    /**
     * A store whose limiter of one policy asks for its acquires to be confirmed and fails every call
     * while it cannot confirm them (a Redis master without a replica); the other policies' calls go
     * through.
     */
    private static final class Confirming implements ThrottleStore {

        private final ThrottleStore store;

        private final String confirmed;

        volatile boolean confirms = true;

        Confirming(ThrottleStore store, String confirmed) {
            this.store = store;
            this.confirmed = confirmed;
        }

        @Override
        public Limiter limiter(Policy policy) {
            Limiter limiter = this.store.limiter(policy);
            if (!policy.name().equals(this.confirmed)) {
                return limiter;
            }
            return new ForwardingLimiter(limiter) {

                @Override
                public boolean keepsUnconfirmedAcquires() {
                    return true;
                }

                @Override
                public Decision tryAcquire(String key, int cost) {
                    if (!Confirming.this.confirms) {
                        throw new IllegalStateException("not confirmed");
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

    @Test
    void aStoreThatDoesNotAskIsGivenNoAcquires() {
        BoundPolicy api = throttler(false).bound("api");
        this.flaky.goDown();
        for (int i = 0; i < 3; i++) {
            assertThat(api.tryAcquire("alice", 1).allowed()).isTrue();
        }
        storeComesBack(api);
        assertThat(this.primary.limiter(API).peek("alice").remaining()).isEqualTo(5);
    }
}
