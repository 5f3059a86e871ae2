package dev.throttle.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import dev.throttle.Algorithm;
import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.Limiter;
import dev.throttle.ManualTimeSource;
import dev.throttle.PackedTransition;
import dev.throttle.Policy;
import dev.throttle.Rates;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.Throttler;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.Transition;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class MemoryThrottleStoreTests {

    private final ManualTimeSource clock = new ManualTimeSource();

    @Test
    void keysAreForgottenOnceIdleForThePolicysIdleExpiry() {
        MemoryThrottleStore store = new MemoryThrottleStore(this.clock, 1000);
        Throttler throttler = new Throttler(
                store, List.of(new GcraPolicy("api", 10, Duration.ofMinutes(1)), SlidingLogPolicy.withDefaults("log")));
        for (int i = 0; i < 100; i++) {
            throttler.tryAcquire("api", "k" + i);
            throttler.tryAcquire("log", "k" + i);
        }
        assertThat(store.keyCount()).isEqualTo(200);
        this.clock.advance(Duration.ofMinutes(1).plus(MemoryCells.EXPIRY_MARGIN));
        assertThat(store.keyCount())
                .as("gcra keys idle for its period are gone")
                .isEqualTo(100);
        this.clock.advance(Duration.ofHours(1));
        assertThat(store.keyCount()).isZero();
    }

    @Test
    void theStoreHoldsAtMostMaximumKeysPerPolicy() {
        MemoryThrottleStore store = new MemoryThrottleStore(this.clock, 100);
        Throttler throttler = new Throttler(store, List.of(TokenBucketPolicy.of("tb", 5, Duration.ofHours(1))));
        for (int i = 0; i < 10_000; i++) {
            throttler.tryAcquire("tb", "key-" + i);
        }
        assertThat(store.keyCount()).isLessThanOrEqualTo(100);
    }

    @Test
    void clearForgetsEveryKey() {
        MemoryThrottleStore store = new MemoryThrottleStore(this.clock, 100);
        Throttler throttler = new Throttler(store, List.of(new GcraPolicy("api", 1, Duration.ofMinutes(1))));
        throttler.tryAcquire("api", "k");
        assertThat(throttler.tryAcquire("api", "k").allowed()).isFalse();
        store.clear();
        assertThat(throttler.tryAcquire("api", "k").allowed()).isTrue();
    }

    @Test
    void aPolicyNameBoundAgainUnderOtherNumbersSharesItsKeysButNeverChangesAlgorithm() {
        MemoryThrottleStore store = new MemoryThrottleStore(this.clock, 100);
        Limiter one = store.limiter(new GcraPolicy("api", 1, Duration.ofMinutes(1)));
        assertThat(store.limiter(new GcraPolicy("api", 1, Duration.ofMinutes(1))))
                .isSameAs(one);
        Limiter two = store.limiter(new GcraPolicy("api", 2, Duration.ofMinutes(1)));
        assertThat(two).isNotSameAs(one);
        one.tryAcquire("k", 1);
        assertThat(two.peek("k").remaining())
                .as("the call under one per minute is one of two")
                .isEqualTo(1);
        assertThatIllegalArgumentException()
                .isThrownBy(() -> store.limiter(new FixedWindowPolicy("api", 2, Duration.ofMinutes(1))))
                .withMessageContaining("another algorithm");
    }

    @Test
    void aClockSteppingBackwardsNeitherGrantsExtraNorBreaksTheState() {
        MemoryThrottleStore store = new MemoryThrottleStore(this.clock, 100);
        Throttler throttler = new Throttler(store, List.of(TokenBucketPolicy.of("tb", 2, Duration.ofSeconds(10))));
        throttler.tryAcquire("tb", "k", 2);
        this.clock.advance(Duration.ofHours(-1));
        assertThat(throttler.tryAcquire("tb", "k").allowed()).isFalse();
        this.clock.advance(Duration.ofHours(1).plusSeconds(10));
        assertThat(throttler.tryAcquire("tb", "k").allowed()).isTrue();
    }

    /**
     * Caffeine keeps access times only to within a second (a read within a second of the last recorded
     * one is not recorded), so an entry may expire up to a second before its last read plus its idle
     * expiry: the store's entries live that second longer than the policy's idle expiry.
     */
    @Test
    void aKeyIsKeptUntilItsStateIsNeutralThoughCaffeineRecordsAccessesToTheSecond() {
        MemoryThrottleStore store = new MemoryThrottleStore(this.clock, 100);
        Throttler throttler = new Throttler(store, List.of(new FixedWindowPolicy("fw", 1, Duration.ofSeconds(15))));
        throttler.tryAcquire("fw", "k");
        this.clock.advanceMillis(14_999);
        assertThat(throttler.peek("fw", "k").allowed()).isFalse();
        this.clock.advanceMillis(1);
        assertThat(throttler.tryAcquire("fw", "k")).as("a new window").isEqualTo(Decision.allow(1, 0, 15_000));
        this.clock.advanceMillis(14_999);
        assertThat(throttler.tryAcquire("fw", "k"))
                .as("the window is still open")
                .isEqualTo(Decision.reject(1, 0, 1, 1));
    }

    @Test
    void maximumKeysMustBePositive() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new MemoryThrottleStore(this.clock, 0))
                .withMessage("maximum-keys must be at least 1, was 0");
    }

    @Test
    void anAlgorithmFromElsewherePlugsItsTransitionIntoTheStoreUnchanged() {
        MemoryThrottleStore store = new MemoryThrottleStore(this.clock, 100);
        Throttler throttler = new Throttler(store, List.of(new Allowance("three", 3)));
        for (int i = 0; i < 3; i++) {
            assertThat(throttler.tryAcquire("three", "k")).isEqualTo(Decision.allow(3, 2 - i, 60_000));
        }
        assertThat(throttler.tryAcquire("three", "k").allowed()).isFalse();
        throttler.refund("three", "k", 1);
        assertThat(throttler.peek("three", "k")).isEqualTo(Decision.allow(3, 1, 60_000));
        this.clock.advance(Duration.ofMinutes(1).plus(MemoryCells.EXPIRY_MARGIN));
        assertThat(store.keyCount())
                .as("idle keys expire as every algorithm's do")
                .isZero();
    }

    /** A sixth algorithm, defined here: a fixed allowance per key that only a reset renews. */
    record Allowance(String name, int quota) implements Policy {

        static final Algorithm<Allowance> ALGORITHM = new Algorithm<>("allowance", Allowance.class, "quota") {

            @Override
            protected Allowance build(String name, Settings settings) {
                return new Allowance(name, settings.required("quota", Integer.class));
            }

            @Override
            protected List<Object> values(Allowance policy) {
                return List.of(policy.quota());
            }

            @Override
            protected long[] numbers(Allowance policy) {
                return new long[] {policy.quota()};
            }

            @Override
            protected Transition transition(Allowance policy, Rates rates) {
                return new PackedTransition() {

                    @Override
                    public long acquire(long state, long now, int cost) {
                        long used = (state == EMPTY) ? 0 : state;
                        return (used + cost > policy.quota()) ? REJECTED : used + cost;
                    }

                    @Override
                    public Decision allowed(long next, long now) {
                        return Decision.allow(policy.quota(), policy.quota() - (int) next, 60_000);
                    }

                    @Override
                    public Decision rejected(long state, long now, int cost) {
                        return Decision.reject(policy.quota(), 0, 60_000, 60_000);
                    }

                    @Override
                    public Decision peek(long state, long now) {
                        return (state == EMPTY)
                                ? Decision.allow(policy.quota(), policy.quota(), 0)
                                : (state < policy.quota()) ? allowed(state, now) : rejected(state, now, 1);
                    }

                    @Override
                    public long refund(long state, long now, int cost) {
                        return (state <= cost) ? EMPTY : state - cost;
                    }
                };
            }
        };

        @Override
        public Algorithm<?> algorithm() {
            return ALGORITHM;
        }

        @Override
        public Duration window() {
            return Duration.ofMinutes(1);
        }

        @Override
        public int maxCost() {
            return this.quota;
        }

        @Override
        public Duration idleExpiry() {
            return Duration.ofMinutes(1);
        }
    }
}
