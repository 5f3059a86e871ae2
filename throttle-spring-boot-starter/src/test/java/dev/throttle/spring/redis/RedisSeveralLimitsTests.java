package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.ManualTimeSource;
import dev.throttle.MultiLimitPolicy;
import dev.throttle.Policy;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.testing.redis.RedisEndpoint;
import dev.throttle.testing.redis.RedisMonitor;
import dev.throttle.testing.redis.SharedRedis;
import dev.throttle.testing.redis.SharedRedis.WithRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * A policy with several limits in Redis: still one {@code EVALSHA} per decision, refund and peek,
 * every limit's state in the key's one value, and a refusal by one limit writes nothing. (The
 * decisions themselves are the store contract's, {@code ThrottleStoreContract.SeveralLimits}.)
 */
@WithRedis
class RedisSeveralLimitsTests {

    /** 2 a second and 3 an hour. */
    private static final Policy SEARCH = MultiLimitPolicy.of(
            TokenBucketPolicy.of("search", 2, Duration.ofSeconds(1)),
            TokenBucketPolicy.of("search", 3, Duration.ofHours(1)));

    private static LettuceConnectionFactory connectionFactory;

    private RedisClient client;

    private RedisCommands<String, String> redis;

    private RedisThrottleStore store;

    private final ManualTimeSource clock = new ManualTimeSource();

    @BeforeAll
    static void connect() {
        connectionFactory = SharedRedis.endpoint().newConnectionFactory();
    }

    @AfterAll
    static void disconnect() {
        connectionFactory.destroy();
    }

    @BeforeEach
    void open(RedisEndpoint endpoint) {
        this.client = endpoint.newClient();
        this.redis = this.client.connect().sync();
        this.store = new RedisThrottleStore(connectionFactory, "several", Duration.ofSeconds(2), this.clock);
        this.redis.del("several:{search:k}", "several:{search:warm-up}");
    }

    @AfterEach
    void close() {
        this.store.close();
        this.client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }

    @Test
    void everyDecisionRefundAndPeekOfTwoLimitsIsOneEvalsha(RedisEndpoint endpoint) throws Exception {
        this.store.warmUpDone().get(10, TimeUnit.SECONDS);
        Limiter limiter = this.store.limiter(SEARCH);
        // first use of the script: EVALSHA, NOSCRIPT, EVAL; not what this test counts
        limiter.tryAcquire("warm-up", 1);
        try (RedisMonitor monitor = new RedisMonitor(endpoint)) {
            this.redis.echo("start");
            monitor.awaitMarker("start");
            monitor.clear();
            int calls = 0;
            for (int i = 0; i < 3; i++) {
                Decision taken = limiter.tryAcquire("k", 1);
                limiter.peek("k");
                limiter.refund("k", 1, taken);
                limiter.tryAcquireAsync("k", 1).toCompletableFuture().join();
                limiter.tryAcquire("k", 2);
                calls += 5;
            }
            this.redis.echo("end");
            monitor.awaitMarker("end");
            List<String> topLevel = monitor.commands().stream()
                    .filter(RedisMonitor.Command::isTopLevel)
                    .map(RedisMonitor.Command::name)
                    .toList();
            assertThat(topLevel.stream().filter("EVALSHA"::equals).count()).isEqualTo(calls);
            assertThat(topLevel)
                    .as("nothing else: one round trip per decision, refusals included")
                    .hasSize(calls + 1)
                    .last()
                    .isEqualTo("ECHO");
        }
    }

    @Test
    void theKeyHoldsEveryLimitsStateInOneValueThatLivesAsLongAsTheLongestLimit() {
        Limiter limiter = this.store.limiter(SEARCH);
        long now = this.clock.currentTimeMillis();
        limiter.tryAcquire("k", 1);
        assertThat(this.redis.get("several:{search:k}")).isEqualTo("1:" + now + "|1:" + now);
        assertThat(this.redis.pttl("several:{search:k}")).isBetween(3_500_000L, 3_600_000L);
    }

    @Test
    void aRefusalByOneLimitWritesNothing() {
        Limiter limiter = this.store.limiter(SEARCH);
        limiter.tryAcquire("k", 2);
        String before = this.redis.get("several:{search:k}");
        Decision refused = limiter.tryAcquire("k", 1);
        assertThat(refused.allowed()).isFalse();
        assertThat(refused.limit(1).allowed()).isTrue();
        assertThat(this.redis.get("several:{search:k}")).isEqualTo(before);
    }

    @Test
    void aRefundOfEveryUnitForgetsTheKey() {
        Limiter limiter = this.store.limiter(SEARCH);
        Decision taken = limiter.tryAcquire("k", 1);
        limiter.refund("k", 1, taken);
        assertThat(this.redis.exists("several:{search:k}")).isZero();
    }
}
