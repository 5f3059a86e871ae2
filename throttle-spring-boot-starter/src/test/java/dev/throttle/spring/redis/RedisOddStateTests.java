package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNoException;

import dev.throttle.ConcurrencyPolicy;
import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.Limiter;
import dev.throttle.LockoutPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.Policy;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.testing.redis.RedisEndpoint;
import dev.throttle.testing.redis.SharedRedis;
import dev.throttle.testing.redis.SharedRedis.WithRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * State no writer of this library leaves, written into Redis by hand: numbers out of range, inf,
 * nan, exponent notation. Every script reads it as no state (or clamps it), never answers with an
 * error, and never hands the Java side a number it cannot make a decision of: one odd key must not
 * put the store into failure mode.
 */
@WithRedis
class RedisOddStateTests {

    private static final List<Policy> POLICIES = List.of(
            TokenBucketPolicy.of("tb", 10, Duration.ofSeconds(2)),
            new GcraPolicy("gcra", 3, Duration.ofSeconds(60)),
            new FixedWindowPolicy("fw", 3, Duration.ofSeconds(10)),
            new SlidingLogPolicy("log", 2, Duration.ofMinutes(1), Duration.ofSeconds(10), 1),
            LockoutPolicy.of("lock", List.of(Duration.ofSeconds(1), Duration.ofSeconds(2))),
            new ConcurrencyPolicy("slots", 2, Duration.ofSeconds(30)));

    private static final List<String> ODD_NUMBERS = List.of(
            "1e300",
            "-1e300",
            "inf",
            "-inf",
            "nan",
            "-nan",
            "99999999999999999999",
            "9007199254740993",
            "1.5",
            "0x10",
            "  7  ",
            "");

    private static LettuceConnectionFactory connectionFactory;

    private final ManualTimeSource clock = new ManualTimeSource();

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

    private RedisThrottleStore store() {
        RedisThrottleStore store = new RedisThrottleStore(connectionFactory, "odd", Duration.ofSeconds(2), this.clock);
        this.stores.add(store);
        return store;
    }

    /** Every shape a script reads, each with every odd number in each of its places. */
    private List<String> oddStates() {
        String now = Long.toString(this.clock.currentTimeMillis());
        List<String> states = new ArrayList<>();
        for (String odd : ODD_NUMBERS) {
            states.add(odd);
            states.add(odd + ":" + now);
            states.add("1:" + odd);
            states.add(odd + ":" + odd);
            states.add("L" + String.format("%15s", odd));
            states.add("L" + String.format("%15s", odd) + String.format("%015d", this.clock.currentTimeMillis()));
            states.add("L" + String.format("%015d", this.clock.currentTimeMillis() - 1) + String.format("%15s", odd));
        }
        String id = String.format("%016d", this.clock.currentTimeMillis() * 1000 + 1);
        for (String odd : ODD_NUMBERS) {
            states.add("C" + String.format("%16s", odd));
            states.add("C" + String.format("%16s", odd) + id);
            states.add("C" + id + String.format("%16s", odd));
            states.add("C" + id + String.format("%16s", odd) + id);
        }
        states.add("L000000000001e99");
        states.add("1:"
                + (this.clock.currentTimeMillis() + Duration.ofDays(365 * 18).toMillis()));
        return states;
    }

    @Test
    void aScoreOrATimeOutOfRangeIsNoStateAndNeverAnError() {
        RedisThrottleStore store = store();
        for (Policy policy : POLICIES) {
            Limiter limiter = store.limiter(policy);
            String key = store.redisKey(policy.name(), "k");
            Decision fresh = limiter.peek("never-used");
            for (String state : oddStates()) {
                String as = policy.name() + " over " + state;
                this.redis.set(key, state);
                assertThat(limiter.peek("k")).as(as).satisfies((peeked) -> assertSane(peeked, as));
                // neutral, or a count read as one (0x10 is 16 to Lua) and clamped: either way a decision
                Decision first = limiter.tryAcquire("k", 1);
                assertSane(first, as);
                this.redis.set(key, state);
                assertThatNoException().as(as).isThrownBy(() -> limiter.refund("k", 1));
                this.redis.set(key, state);
                assertThatNoException().as(as).isThrownBy(() -> limiter.refund("k", 1, first.receipt()));
                this.redis.del(key);
                assertThat(limiter.peek("k")).as(as).isEqualTo(fresh);
            }
        }
    }

    @Test
    void aGcraScoreOfInfOrOneETheThreeHundredIsNoScore() {
        RedisThrottleStore store = store();
        Limiter gcra = store.limiter(POLICIES.get(1));
        for (String score : List.of("1e300", "inf", "-inf", "nan", "99999999999999999999")) {
            this.redis.set(store.redisKey("gcra", "k"), score);
            assertThat(gcra.tryAcquire("k", 1)).as(score).isEqualTo(Decision.allow(3, 2, 20_000));
            assertThat(this.redis.get(store.redisKey("gcra", "k")))
                    .isEqualTo((this.clock.currentTimeMillis() * 1000 + 20_000_000) + ":20000000");
        }
    }

    @Test
    void aReceiptOutOfRangeNamesNoCallAndGivesBackNothing() {
        RedisThrottleStore store = store();
        for (Policy policy : POLICIES) {
            Limiter limiter = store.limiter(policy);
            limiter.tryAcquire("k", 1);
            Decision before = limiter.peek("k");
            for (long receipt : new long[] {1L << 53, 1L << 60, Long.MAX_VALUE}) {
                assertThatNoException().isThrownBy(() -> limiter.refund("k", 1, receipt));
            }
            assertThat(limiter.peek("k")).as(policy.name()).isEqualTo(before);
        }
    }

    private static void assertSane(Decision decision, String as) {
        assertThat(decision.limit()).as(as).isPositive();
        assertThat(decision.resetAfterMillis())
                .as(as)
                .isBetween(0L, Duration.ofDays(3650).toMillis());
        assertThat(decision.nextUnitAfterMillis())
                .as(as)
                .isBetween(0L, Duration.ofDays(3650).toMillis());
        if (!decision.allowed()) {
            assertThat(decision.retryAfterMillis())
                    .as(as)
                    .isBetween(1L, Duration.ofDays(3650).toMillis());
        }
    }
}
