package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.DecisionSource;
import dev.throttle.GcraPolicy;
import dev.throttle.Limiter;
import dev.throttle.LockoutPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.Policy;
import dev.throttle.SourcedLimiter;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.resilience.RememberedRefusals;
import dev.throttle.testing.redis.RedisEndpoint;
import dev.throttle.testing.redis.RedisMonitor;
import dev.throttle.testing.redis.SharedRedis;
import dev.throttle.testing.redis.SharedRedis.WithRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The near cache of refusals on one instance, against a real Redis: what it answers (the true,
 * decreasing Retry-After, with no Redis command), what it does not remember, and what makes it forget.
 * The stores run on a manual clock that the scripts are handed, so that Redis's own answer at the
 * same moment can be compared with the near cache's.
 */
@WithRedis
class RedisNearCacheTests {

    private static final Policy LOCKOUT =
            LockoutPolicy.of("login", List.of(Duration.ofMinutes(1), Duration.ofMinutes(5)));

    private static final long T0 = 1_700_000_000_000L;

    private static LettuceConnectionFactory connectionFactory;

    private final ManualTimeSource clock = new ManualTimeSource(java.time.Instant.ofEpochMilli(T0));

    private final List<RedisThrottleStore> stores = new ArrayList<>();

    private RedisClient client;

    private RedisCommands<String, String> redis;

    @BeforeAll
    static void connect() {
        connectionFactory = SharedRedis.endpoint().newConnectionFactory();
    }

    @AfterAll
    static void disconnect() {
        connectionFactory.destroy();
    }

    @BeforeEach
    void openRawClient(RedisEndpoint endpoint) {
        this.client = endpoint.newClient();
        this.redis = this.client.connect().sync();
    }

    @AfterEach
    void close() {
        this.stores.forEach(RedisThrottleStore::close);
        this.client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }

    private RedisThrottleStore store(NearCacheSettings settings) {
        RedisThrottleStore store =
                new RedisThrottleStore(connectionFactory, "throttle", Duration.ofSeconds(5), this.clock, settings);
        this.stores.add(store);
        // its warm-up (a ping, its scripts, a look at Redis's settings) is not what these tests watch
        store.warmUpDone().orTimeout(10, TimeUnit.SECONDS).join();
        if (settings.isEnabled()) {
            // subscribing forgets everything (events may have been missed before): wait for it
            store.eventsSubscribed().orTimeout(10, TimeUnit.SECONDS).join();
        }
        return store;
    }

    private static NearCacheSettings nearCache() {
        return NearCacheSettings.of(1000, Duration.ofMillis(50));
    }

    @Test
    void aRememberedRefusalIsAnsweredWithTheTimeLeftAndNoRedisCommand(RedisEndpoint endpoint) {
        SourcedLimiter limiter = (SourcedLimiter) store(nearCache()).limiter(LOCKOUT);
        Limiter plain = store(NearCacheSettings.disabled()).limiter(LOCKOUT);
        assertThat(limiter.tryAcquire("alice", 1).allowed()).isTrue();
        Decision refused = limiter.tryAcquire("alice", 1);
        assertThat(refused.retryAfterMillis()).isEqualTo(60_000);
        try (RedisMonitor monitor = new RedisMonitor(endpoint)) {
            this.redis.echo("start");
            monitor.awaitMarker("start");
            monitor.clear();
            for (long at : new long[] {1, 10_000, 59_999}) {
                this.clock.set(java.time.Instant.ofEpochMilli(T0 + at));
                var answer = limiter.tryAcquireSourced("alice", 1);
                assertThat(answer.source()).isEqualTo(DecisionSource.nearCache("redis"));
                assertThat(answer.decision().retryAfterMillis()).isEqualTo(60_000 - at);
                assertThat(answer.decision().nextUnitAfterMillis()).isEqualTo(60_000 - at);
                assertThat(answer.decision().remaining()).isZero();
                this.redis.echo("check");
                monitor.awaitMarker("check");
                assertThat(monitor.commands().stream()
                                .filter(RedisMonitor.Command::isTopLevel)
                                .map(RedisMonitor.Command::name))
                        .as("no call to Redis")
                        .containsOnly("ECHO");
                // what Redis itself says at that moment, through a store without a near cache
                assertThat(answer.decision()).isEqualTo(plain.tryAcquire("alice", 1));
                this.redis.echo("again");
                monitor.awaitMarker("again");
                monitor.clear();
            }
        }
        this.clock.set(java.time.Instant.ofEpochMilli(T0 + 60_000));
        var afterwards = limiter.tryAcquireSourced("alice", 1);
        assertThat(afterwards.source())
                .as("its time has passed: Redis decides")
                .isEqualTo(DecisionSource.store("redis"));
        assertThat(afterwards.decision().allowed()).isTrue();
    }

    @Test
    void aRefusalShorterThanTheThresholdIsNotRemembered() {
        // 10 per second: a refusal waits 100 ms at most; the threshold here is 200 ms
        SourcedLimiter limiter = (SourcedLimiter) store(NearCacheSettings.of(1000, Duration.ofMillis(200)))
                .limiter(new GcraPolicy("api", 10, Duration.ofSeconds(1)));
        for (int i = 0; i < 10; i++) {
            assertThat(limiter.tryAcquire("bob", 1).allowed()).isTrue();
        }
        assertThat(limiter.tryAcquireSourced("bob", 1).decision().retryAfterMillis())
                .isEqualTo(100);
        assertThat(limiter.tryAcquireSourced("bob", 1).source()).isEqualTo(DecisionSource.store("redis"));
    }

    @Test
    void aPolicySwitchedOffAsksRedisEveryTimeButRemembersForAnOutage() {
        RedisThrottleStore store = store(nearCache().withPolicy("login", false));
        SourcedLimiter limiter = (SourcedLimiter) store.limiter(LOCKOUT);
        limiter.tryAcquire("carol", 1);
        assertThat(limiter.tryAcquireSourced("carol", 1).source()).isEqualTo(DecisionSource.store("redis"));
        assertThat(limiter.tryAcquireSourced("carol", 1).source()).isEqualTo(DecisionSource.store("redis"));
        this.clock.advanceMillis(1000);
        assertThat(((RememberedRefusals) limiter).rememberedRefusal("carol", 1).retryAfterMillis())
                .isEqualTo(59_000);
    }

    @Test
    void onlyRefusalsOfCostOneAreRememberedAndAnswerOnlyThatCost() {
        SourcedLimiter limiter =
                (SourcedLimiter) store(nearCache()).limiter(new TokenBucketPolicy("tb", 5, 1, Duration.ofMinutes(1)));
        assertThat(limiter.tryAcquire("dave", 4).allowed()).isTrue();
        assertThat(limiter.tryAcquire("dave", 3).allowed()).isFalse();
        // a refill would give a unit back before cost 3 passes, changing RateLimit's r: not remembered
        assertThat(limiter.tryAcquireSourced("dave", 3).source()).isEqualTo(DecisionSource.store("redis"));
        var smaller = limiter.tryAcquireSourced("dave", 1);
        assertThat(smaller.source())
                .as("a smaller cost may pass: Redis decides")
                .isEqualTo(DecisionSource.store("redis"));
        assertThat(smaller.decision().allowed()).isTrue();
        assertThat(limiter.tryAcquire("dave", 1).allowed()).isFalse();
        assertThat(limiter.tryAcquireSourced("dave", 1).source()).isEqualTo(DecisionSource.nearCache("redis"));
        assertThat(limiter.tryAcquireSourced("dave", 2).source())
                .as("another cost: Redis decides")
                .isEqualTo(DecisionSource.store("redis"));
    }

    @Test
    void resetsAndRefundsMadeHereForgetTheKey() {
        RedisThrottleStore store = store(nearCache());
        SourcedLimiter limiter = (SourcedLimiter) store.limiter(LOCKOUT);
        limiter.tryAcquire("erin", 1);
        limiter.tryAcquire("erin", 1);
        assertThat(store.nearCacheSize()).isEqualTo(1);
        limiter.reset("erin");
        assertThat(store.nearCacheSize()).isZero();
        var first = limiter.tryAcquireSourced("erin", 1);
        assertThat(first.decision().allowed()).isTrue();
        assertThat(limiter.tryAcquire("erin", 1).allowed()).isFalse();
        assertThat(limiter.tryAcquireSourced("erin", 1).source()).isEqualTo(DecisionSource.nearCache("redis"));
        limiter.refund("erin", 1, first.decision().receipt());
        var again = limiter.tryAcquireSourced("erin", 1);
        assertThat(again.source()).isEqualTo(DecisionSource.store("redis"));
        assertThat(again.decision().allowed())
                .as("the refund gave the attempt back")
                .isTrue();
    }

    @Test
    void bindingAPolicyAgainWithOtherNumbersForgetsItsRefusals() {
        RedisThrottleStore store = store(nearCache());
        Policy strict = new GcraPolicy("api", 1, Duration.ofMinutes(1));
        SourcedLimiter before = (SourcedLimiter) store.limiter(strict);
        before.tryAcquire("frank", 1);
        assertThat(before.tryAcquire("frank", 1).allowed()).isFalse();
        assertThat(before.tryAcquireSourced("frank", 1).source()).isEqualTo(DecisionSource.nearCache("redis"));
        SourcedLimiter after = (SourcedLimiter) store.limiter(new GcraPolicy("api", 100, Duration.ofMinutes(10)));
        assertThat(after).isNotSameAs(before);
        assertThat(store.limiter(new GcraPolicy("api", 100, Duration.ofMinutes(10))))
                .isSameAs(after);
        assertThat(store.nearCacheSize()).isZero();
        assertThat(before.tryAcquireSourced("frank", 1).source()).isEqualTo(DecisionSource.store("redis"));
        assertThat(after.tryAcquire("frank", 1).allowed())
                .as("the same key's state, under the new numbers")
                .isTrue();
    }

    @Test
    void theBoundHoldsAtMaximumKeys() throws Exception {
        RedisThrottleStore store = store(NearCacheSettings.of(100, Duration.ofMillis(50)));
        Limiter limiter = store.limiter(LOCKOUT);
        for (int i = 0; i < 300; i++) {
            limiter.tryAcquire("user-" + i, 1);
            limiter.tryAcquire("user-" + i, 1);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (store.nearCacheSize() > 100 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(store.nearCacheSize()).isBetween(1L, 100L);
    }
}
