package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Estimate;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.MultiLimitPolicy;
import dev.throttle.Policy;
import dev.throttle.Throttler;
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
 * A cost known after the call, in Redis: settling it up (a charge) or down (a refund by receipt) is
 * one {@code EVALSHA}, on one limit or several, and a key in debt lives as long as its debt does.
 * (The decisions themselves are the store contract's, {@code ThrottleStoreContract.ActualCost}.)
 */
@WithRedis
class RedisActualCostTests {

    private static final List<Policy> POLICIES = List.of(
            new GcraPolicy("gcra", 10, Duration.ofSeconds(10)),
            TokenBucketPolicy.of("tb", 10, Duration.ofSeconds(1)),
            new FixedWindowPolicy("fw", 10, Duration.ofSeconds(10)),
            MultiLimitPolicy.of(
                    TokenBucketPolicy.of("several", 10, Duration.ofSeconds(1)),
                    TokenBucketPolicy.of("several", 100, Duration.ofMinutes(1))));

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
        this.store = new RedisThrottleStore(connectionFactory, "costs", Duration.ofSeconds(2), this.clock);
        for (Policy policy : POLICIES) {
            this.redis.del("costs:{" + policy.name() + ":k}", "costs:{" + policy.name() + ":warm-up}");
        }
    }

    @AfterEach
    void close() {
        this.store.close();
        this.client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }

    @Test
    void settlingUpOrDownIsOneEvalshaOnOneLimitOrSeveral(RedisEndpoint endpoint) throws Exception {
        this.store.warmUpDone().get(10, TimeUnit.SECONDS);
        Throttler throttler = new Throttler(this.store, POLICIES);
        for (Policy policy : POLICIES) {
            // first use of the script: EVALSHA, NOSCRIPT, EVAL; not what this test counts
            throttler.estimate(policy.name(), "warm-up", 1).settle(2);
        }
        try (RedisMonitor monitor = new RedisMonitor(endpoint)) {
            this.redis.echo("start");
            monitor.awaitMarker("start");
            monitor.clear();
            int calls = 0;
            for (Policy policy : POLICIES) {
                Estimate up = throttler.estimate(policy.name(), "k", 2);
                up.settle(30);
                Estimate down = throttler.estimate(policy.name(), "other", 5);
                down.settle(1);
                Estimate same = throttler.estimate(policy.name(), "same", 3);
                same.settle(3);
                // three decisions, a charge, a refund; an equal cost settles nothing
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
                    .as("nothing else: one round trip per settlement")
                    .hasSize(calls + 1)
                    .last()
                    .isEqualTo("ECHO");
        }
    }

    @Test
    void aKeyInDebtLivesUntilItsDebtIsPaid() {
        Throttler throttler = new Throttler(this.store, POLICIES);
        throttler.estimate("tb", "k", 1).settle(20);
        assertThat(this.redis.pttl("costs:{tb:k}"))
                .as("20 tokens in use come back in 20 s, past the 10 s an empty bucket takes to fill")
                .isBetween(19_000L, 20_000L);
        throttler.estimate("fw", "k", 1).settle(15);
        assertThat(this.redis.pttl("costs:{fw:k}"))
                .as("the debt is carried into the next window: the key lives to its end")
                .isBetween(19_000L, 20_000L);
    }
}
