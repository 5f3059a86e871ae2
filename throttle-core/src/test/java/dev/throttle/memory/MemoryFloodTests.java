package dev.throttle.memory;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.LockoutPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.Policy;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.ThrottleStore;
import dev.throttle.Throttler;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.testing.FlakyStore;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A flood of distinct keys never buys a refused key a fresh quota: the memory
 * store evicts no key before its state is neutral, and a key that arrives while the store is full
 * of live keys is decided by the policy's one shared overflow bucket instead. So it is, too, in the
 * Redis store's local fallback, which is a memory store.
 */
class MemoryFloodTests {

    private static final int MAXIMUM_KEYS = 1_000;

    private static final long REFUSED_FOR = 101_000;

    private final ManualTimeSource clock = new ManualTimeSource();

    /** Each algorithm, set so that a victim's second call is refused for 101 s. */
    private final List<Policy> policies = List.of(
            LockoutPolicy.of("lock", List.of(Duration.ofMillis(REFUSED_FOR))),
            TokenBucketPolicy.of("tb", 1, Duration.ofMillis(REFUSED_FOR)),
            new FixedWindowPolicy("fw", 1, Duration.ofMillis(REFUSED_FOR)),
            new GcraPolicy("gcra", 1, Duration.ofMillis(REFUSED_FOR)),
            new SlidingLogPolicy("log", 1, Duration.ofMinutes(10), Duration.ofMillis(REFUSED_FOR), 1));

    @Test
    void aFloodOfTenTimesMaximumKeysLeavesARefusedKeyRefusedUntilItsRetryAfter() {
        MemoryThrottleStore store = new MemoryThrottleStore(this.clock, MAXIMUM_KEYS);
        floodAndCheckTheVictim(store, store);
    }

    @Test
    void soItIsInTheRedisStoresLocalFallback() {
        MemoryThrottleStore local = new MemoryThrottleStore(this.clock, MAXIMUM_KEYS);
        FlakyStore redis = new FlakyStore(new MemoryThrottleStore(this.clock, MAXIMUM_KEYS), "redis");
        redis.goDown();
        try (ResilientThrottleStore store = new ResilientThrottleStore(redis, FailureMode.LOCAL, local)) {
            floodAndCheckTheVictim(store, local);
        }
    }

    private void floodAndCheckTheVictim(ThrottleStore store, MemoryThrottleStore memory) {
        Throttler throttler = new Throttler(store, this.policies);
        for (Policy policy : this.policies) {
            String name = policy.name();
            // a store under half full of ordinary keys
            for (int i = 0; i < MAXIMUM_KEYS / 2 - 10; i++) {
                throttler.tryAcquire(name, "user-" + i);
            }
            assertThat(throttler.tryAcquire(name, "victim@example.com").allowed())
                    .as(name)
                    .isTrue();
            Decision refused = throttler.tryAcquire(name, "victim@example.com");
            assertThat(refused.allowed()).as(name).isFalse();
            assertThat(refused.retryAfterMillis()).as(name).isEqualTo(REFUSED_FOR);
            long refusedAt = this.clock.currentTimeMillis();
            // ten times maximum-keys distinct guesses, one attempt each, over the next 100 s
            for (int i = 0; i < 10 * MAXIMUM_KEYS; i++) {
                throttler.tryAcquire(name, "guess-" + i + "@example.com");
                if (i % 100 == 99) {
                    this.clock.advanceMillis(1_000);
                    assertThat(throttler.tryAcquire(name, "victim@example.com").allowed())
                            .as("%s after %d guesses", name, i + 1)
                            .isFalse();
                }
            }
            assertThat(memory.keyCount()).as(name + ": still bounded").isLessThanOrEqualTo(MAXIMUM_KEYS);
            this.clock.advanceMillis(refusedAt + REFUSED_FOR - 1 - this.clock.currentTimeMillis());
            assertThat(throttler.tryAcquire(name, "victim@example.com"))
                    .as(name + ": a millisecond before Retry-After")
                    .isEqualTo(Decision.reject(
                            refused.limit(),
                            0,
                            1,
                            throttler.peek(name, "victim@example.com").resetAfterMillis()));
            this.clock.advanceMillis(1);
            assertThat(throttler.tryAcquire(name, "victim@example.com").allowed())
                    .as(name + ": at Retry-After")
                    .isTrue();
            this.clock.advance(Duration.ofHours(1));
        }
    }

    @Test
    void theStoreHoldsAtMostMaximumKeysOfEachPolicy() {
        MemoryThrottleStore store = new MemoryThrottleStore(this.clock, MAXIMUM_KEYS);
        Throttler throttler = new Throttler(store, this.policies);
        for (Policy policy : this.policies) {
            for (int i = 0; i < 10 * MAXIMUM_KEYS; i++) {
                throttler.tryAcquire(policy.name(), "guess-" + i);
            }
        }
        assertThat(store.keyCount()).isLessThanOrEqualTo(5L * MAXIMUM_KEYS).isGreaterThanOrEqualTo(4L * MAXIMUM_KEYS);
    }

    @Test
    void threadsFloodingAtOnceTakeThePolicyAtMostAFewKeysPastItsMaximum() throws Exception {
        MemoryThrottleStore store = new MemoryThrottleStore(this.clock, MAXIMUM_KEYS);
        Throttler throttler = new Throttler(store, List.of(this.policies.get(0)));
        int threads = 8;
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
        try {
            java.util.concurrent.CountDownLatch start = new java.util.concurrent.CountDownLatch(1);
            List<java.util.concurrent.Future<?>> done = new java.util.ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                done.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < 5 * MAXIMUM_KEYS; i++) {
                        throttler.tryAcquire("lock", "guess-" + thread + "-" + i);
                    }
                    return null;
                }));
            }
            start.countDown();
            for (java.util.concurrent.Future<?> future : done) {
                future.get();
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(store.keyCount()).isLessThanOrEqualTo(MAXIMUM_KEYS + threads);
    }

    @Test
    void clearForgetsTheOverflowBucketToo() {
        MemoryThrottleStore store = new MemoryThrottleStore(this.clock, 1);
        Throttler throttler = new Throttler(
                store,
                List.of(
                        new FixedWindowPolicy("fw", 1, Duration.ofMinutes(1)),
                        new SlidingLogPolicy("log", 1, Duration.ofMinutes(1), Duration.ofMinutes(1), 1)));
        for (String policy : List.of("fw", "log")) {
            throttler.tryAcquire(policy, "held");
            assertThat(throttler.tryAcquire(policy, "newcomer").allowed())
                    .as(policy)
                    .isTrue();
            assertThat(throttler.tryAcquire(policy, "another").allowed())
                    .as(policy + ": the overflow is spent")
                    .isFalse();
        }
        store.clear();
        for (String policy : List.of("fw", "log")) {
            throttler.tryAcquire(policy, "held");
            assertThat(throttler.tryAcquire(policy, "another").allowed())
                    .as(policy + ": a clean slate")
                    .isTrue();
        }
    }

    /**
     * The trade-off: while the store is full of keys whose state is not neutral yet, a key it does not
     * hold shares one bucket per policy with every other such key, and is refused once that bucket is
     * spent; the keys the store holds are decided as before. Once keys expire, new keys get their own
     * state again.
     */
    @Test
    void whileTheStoreIsFullNewKeysShareOneOverflowBucketUntilKeysExpire() {
        MemoryThrottleStore store = new MemoryThrottleStore(this.clock, 3);
        Throttler throttler = new Throttler(store, List.of(new FixedWindowPolicy("fw", 2, Duration.ofMinutes(1))));
        for (String key : List.of("a", "b", "c")) {
            assertThat(throttler.tryAcquire("fw", key).allowed()).isTrue();
        }
        this.clock.advance(Duration.ofSeconds(30));
        assertThat(throttler.tryAcquire("fw", "newcomer-1"))
                .as("the overflow bucket's first unit")
                .isEqualTo(Decision.allow(2, 1, 60_000));
        assertThat(throttler.tryAcquire("fw", "newcomer-2").allowed()).isTrue();
        assertThat(throttler.tryAcquire("fw", "newcomer-3").allowed())
                .as("the overflow bucket is spent")
                .isFalse();
        assertThat(throttler.peek("fw", "newcomer-4").allowed())
                .as("a peek tells what the key would get")
                .isFalse();
        assertThat(throttler.tryAcquire("fw", "a"))
                .as("held keys keep their own state")
                .isEqualTo(Decision.allow(2, 0, 30_000));
        this.clock.advance(Duration.ofSeconds(30).plus(MemoryCells.EXPIRY_MARGIN));
        assertThat(throttler.peek("fw", "newcomer-3").allowed())
                .as("b and c expired: room again")
                .isTrue();
        assertThat(throttler.tryAcquire("fw", "newcomer-3"))
                .as("its own state, while the overflow's window is spent")
                .isEqualTo(Decision.allow(2, 1, 60_000));
        assertThat(store.keyCount())
                .as("a, used 30 s after b and c, and newcomer-3")
                .isEqualTo(2);
    }
}
