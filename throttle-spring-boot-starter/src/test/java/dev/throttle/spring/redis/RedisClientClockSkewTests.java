package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.GcraPolicy;
import dev.throttle.Limiter;
import dev.throttle.LockoutPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.Policy;
import dev.throttle.testing.redis.SharedRedis;
import dev.throttle.testing.redis.SharedRedis.WithRedis;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * What clock skew does with {@code throttle.store.redis.clock=client}: each instance passes its own
 * time, so decisions shift by the skew between instances, exactly. Instance B's clock runs 700 ms
 * ahead of A's: after A's call, B is told to wait 700 ms less, and is let through 700 ms early.
 */
@WithRedis
class RedisClientClockSkewTests {

    private static final long SKEW = 700;

    @Test
    void decisionsShiftByTheSkewBetweenInstances() {
        LettuceConnectionFactory factory = SharedRedis.endpoint().newConnectionFactory();
        ManualTimeSource clockA = new ManualTimeSource(Instant.ofEpochMilli(1_700_000_000_000L));
        ManualTimeSource clockB = new ManualTimeSource(Instant.ofEpochMilli(1_700_000_000_000L + SKEW));
        try (RedisThrottleStore a = new RedisThrottleStore(factory, "throttle", Duration.ofSeconds(5), clockA);
                RedisThrottleStore b = new RedisThrottleStore(factory, "throttle", Duration.ofSeconds(5), clockB)) {
            for (Policy policy : List.<Policy>of(
                    new GcraPolicy("gcra", 1, Duration.ofSeconds(10)),
                    LockoutPolicy.of("lock", List.of(Duration.ofSeconds(10))))) {
                Limiter onA = a.limiter(policy);
                Limiter onB = b.limiter(policy);
                assertThat(onA.tryAcquire("alice", 1).allowed()).isTrue();
                Decision seenByA = onA.tryAcquire("alice", 1);
                Decision seenByB = onB.tryAcquire("alice", 1);
                assertThat(seenByA.retryAfterMillis()).isEqualTo(10_000);
                assertThat(seenByB.retryAfterMillis()).as(policy.name()).isEqualTo(10_000 - SKEW);
                clockA.advanceMillis(10_000 - SKEW);
                clockB.advanceMillis(10_000 - SKEW);
                assertThat(onA.peek("alice").allowed()).as("A: 700 ms to go").isFalse();
                assertThat(onB.tryAcquire("alice", 1).allowed())
                        .as("B: let through 700 ms early")
                        .isTrue();
                clockA.advanceMillis(-(10_000 - SKEW));
                clockB.advanceMillis(-(10_000 - SKEW));
            }
        } finally {
            factory.destroy();
        }
    }
}
