package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.LockoutPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.Policy;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.Throttler;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.testing.redis.SharedRedis;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Two instances of an application on one Redis while a policy changes on one of them first (a
 * rolling change at run time): for every algorithm, the instance on the new numbers and the one still on the old
 * numbers each decide by what the key has used under both, as if every call had been theirs. Each
 * instance runs one script per decision over the same key.
 */
class RedisPolicyChangeTests {

    private static LettuceConnectionFactory connectionFactory;

    private final ManualTimeSource clock = new ManualTimeSource();

    private RedisThrottleStore first;

    private RedisThrottleStore second;

    @BeforeAll
    static void connect() {
        connectionFactory = SharedRedis.endpoint().newConnectionFactory();
    }

    @AfterAll
    static void disconnect() {
        connectionFactory.destroy();
    }

    @BeforeEach
    void twoInstances() {
        SharedRedis.flush();
        this.first = new RedisThrottleStore(connectionFactory, "change", Duration.ofSeconds(5), this.clock);
        this.second = new RedisThrottleStore(connectionFactory, "change", Duration.ofSeconds(5), this.clock);
    }

    @AfterEach
    void close() {
        this.first.close();
        this.second.close();
    }

    /** The first instance changes to {@code changed}; the second keeps {@code old}. */
    private Throttler[] instances(Policy old, Policy changed) {
        Throttler updated = new Throttler(this.first, List.of(old));
        Throttler stale = new Throttler(this.second, List.of(old));
        updated.update(changed, Map.of());
        return new Throttler[] {updated, stale};
    }

    @Test
    void tokenBucket() {
        Throttler[] both = instances(
                TokenBucketPolicy.of("p", 10, Duration.ofMinutes(1)),
                TokenBucketPolicy.of("p", 20, Duration.ofMinutes(1)));
        assertThat(both[1].tryAcquire("p", "k", 5).remaining())
                .as("old: 10 - 5")
                .isEqualTo(5);
        assertThat(both[0].tryAcquire("p", "k", 1).remaining())
                .as("new: 20 - 6")
                .isEqualTo(14);
        assertThat(both[1].tryAcquire("p", "k", 4).remaining())
                .as("old: 10 - 10")
                .isZero();
        assertThat(both[1].tryAcquire("p", "k", 1).allowed()).isFalse();
        assertThat(both[0].tryAcquire("p", "k", 10).remaining())
                .as("new: 20 - 20")
                .isZero();
    }

    @Test
    void gcra() {
        Throttler[] both = instances(
                new GcraPolicy("p", 10, Duration.ofMinutes(1)), new GcraPolicy("p", 20, Duration.ofMinutes(1)));
        assertThat(both[1].tryAcquire("p", "k", 5).remaining()).isEqualTo(5);
        assertThat(both[0].tryAcquire("p", "k", 1).remaining()).isEqualTo(14);
        assertThat(both[1].tryAcquire("p", "k", 4).remaining()).isZero();
        assertThat(both[1].tryAcquire("p", "k", 1).allowed()).isFalse();
        assertThat(both[0].tryAcquire("p", "k", 10).remaining()).isZero();
        this.clock.advanceMillis(30_000);
        // the score decays at the rate it was written under: the new one's 3 s per call forgave 10 calls
        assertThat(both[0].peek("p", "k").remaining()).as("new: 10 used of 20").isEqualTo(10);
        assertThat(both[1].peek("p", "k").remaining())
                .as("old: the same 10 used, of 10")
                .isZero();
        this.clock.advanceMillis(6_000);
        assertThat(both[1].peek("p", "k").remaining()).as("old: 8 used").isEqualTo(2);
    }

    @Test
    void fixedWindow() {
        Throttler[] both = instances(
                new FixedWindowPolicy("p", 10, Duration.ofMinutes(1)),
                new FixedWindowPolicy("p", 20, Duration.ofMinutes(2)));
        assertThat(both[1].tryAcquire("p", "k", 5).remaining()).isEqualTo(5);
        assertThat(both[0].tryAcquire("p", "k", 1).remaining()).isEqualTo(14);
        assertThat(both[1].tryAcquire("p", "k", 4).remaining()).isZero();
        assertThat(both[0].tryAcquire("p", "k", 10).remaining()).isZero();
        this.clock.advanceMillis(60_000);
        assertThat(both[1].tryAcquire("p", "k", 1).remaining())
                .as("the old window ended")
                .isEqualTo(9);
        assertThat(both[0].peek("p", "k").remaining())
                .as("a window the old numbers opened")
                .isEqualTo(19);
    }

    @Test
    void slidingLog() {
        Throttler[] both = instances(
                new SlidingLogPolicy("p", 2, Duration.ofMinutes(1), Duration.ofSeconds(10), 1),
                new SlidingLogPolicy("p", 4, Duration.ofMinutes(1), Duration.ofSeconds(10), 1));
        assertThat(both[1].tryAcquire("p", "k").allowed()).isTrue();
        assertThat(both[0].tryAcquire("p", "k").allowed()).isTrue();
        assertThat(both[1].tryAcquire("p", "k").allowed())
                .as("old: two recorded, threshold 2")
                .isFalse();
        assertThat(both[0].tryAcquire("p", "k").allowed()).isTrue();
        assertThat(both[0].tryAcquire("p", "k").allowed()).isTrue();
        assertThat(both[0].tryAcquire("p", "k").allowed())
                .as("new: four recorded, threshold 4")
                .isFalse();
    }

    @Test
    void lockout() {
        Throttler[] both = instances(
                LockoutPolicy.of("p", List.of(Duration.ofSeconds(1), Duration.ofSeconds(2))),
                LockoutPolicy.of("p", List.of(Duration.ofSeconds(5), Duration.ofSeconds(10))));
        assertThat(both[1].tryAcquire("p", "k").allowed()).isTrue();
        this.clock.advanceMillis(1_000);
        assertThat(both[0].tryAcquire("p", "k").allowed())
                .as("new: 5 s after the first")
                .isFalse();
        assertThat(both[1].tryAcquire("p", "k").allowed())
                .as("old: 1 s after the first")
                .isTrue();
        this.clock.advanceMillis(2_000);
        assertThat(both[1].tryAcquire("p", "k").allowed())
                .as("old: second rung, 2 s")
                .isTrue();
        assertThat(both[0].tryAcquire("p", "k").retryAfterMillis())
                .as("new: last rung, 10 s")
                .isEqualTo(10_000);
    }
}
