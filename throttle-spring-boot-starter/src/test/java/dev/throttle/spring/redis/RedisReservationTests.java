package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.Limiter;
import dev.throttle.ManualTimeSource;
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
 * Reservations in Redis: one {@code EVALSHA} per reservation, whatever it answers, and a key that
 * holds reserved turns lives until they are neutral. (The decisions themselves are the store
 * contract's, {@code ThrottleStoreContract.Reservations}.)
 */
@WithRedis
class RedisReservationTests {

    private static final List<Policy> POLICIES = List.of(
            new GcraPolicy("gcra", 2, Duration.ofSeconds(1)),
            TokenBucketPolicy.of("tb", 2, Duration.ofSeconds(1)),
            new FixedWindowPolicy("fw", 2, Duration.ofSeconds(1)));

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
        this.store = new RedisThrottleStore(connectionFactory, "waits", Duration.ofSeconds(2), this.clock);
        for (Policy policy : POLICIES) {
            this.redis.del("waits:{" + policy.name() + ":k}", "waits:{" + policy.name() + ":warm-up}");
        }
    }

    @AfterEach
    void close() {
        this.store.close();
        this.client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }

    @Test
    void everyReservationIsOneEvalshaWhetherAllowedNowReservedOrRefused(RedisEndpoint endpoint) throws Exception {
        this.store.warmUpDone().get(10, TimeUnit.SECONDS);
        List<Limiter> limiters = POLICIES.stream().map(this.store::limiter).toList();
        for (Limiter limiter : limiters) {
            // first use of the script: EVALSHA, NOSCRIPT, EVAL; not what this test counts
            limiter.reserve("warm-up", 1, 1_000);
        }
        try (RedisMonitor monitor = new RedisMonitor(endpoint)) {
            this.redis.echo("start");
            monitor.awaitMarker("start");
            monitor.clear();
            int calls = 0;
            for (Limiter limiter : limiters) {
                assertThat(limiter.reserve("k", 2, 1_000).waitMillis()).isZero();
                Decision reserved = limiter.reserve("k", 1, 1_000);
                assertThat(reserved.waitMillis()).as(limiter.policy().name()).isPositive();
                assertThat(limiter.reserveAsync("k", 2, 1)
                                .toCompletableFuture()
                                .join()
                                .allowed())
                        .isFalse();
                limiter.refund("k", 1, reserved);
                calls += 4;
            }
            this.redis.echo("end");
            monitor.awaitMarker("end");
            List<String> topLevel = monitor.commands().stream()
                    .filter(RedisMonitor.Command::isTopLevel)
                    .map(RedisMonitor.Command::name)
                    .toList();
            assertThat(topLevel.stream().filter("EVALSHA"::equals).count()).isEqualTo(calls);
            assertThat(topLevel)
                    .as("nothing else: one round trip per reservation, refusals and refunds included")
                    .hasSize(calls + 1)
                    .last()
                    .isEqualTo("ECHO");
        }
    }

    @Test
    void aKeyHoldingReservedTurnsLivesUntilTheyAreNeutral() {
        for (Policy policy : POLICIES) {
            Limiter limiter = this.store.limiter(policy);
            limiter.reserve("k", 2, 0);
            Decision reserved = limiter.reserve("k", 2, 5_000);
            assertThat(reserved.waitMillis()).as(policy.name()).isPositive();
            assertThat(this.redis.pttl("waits:{" + policy.name() + ":k}"))
                    .as(policy.name() + ": lives as long as the reservation keeps the state from neutral")
                    .isBetween(reserved.resetAfterMillis() - 1_000, reserved.resetAfterMillis())
                    .isGreaterThan(policy.idleExpiry().toMillis());
        }
    }
}
