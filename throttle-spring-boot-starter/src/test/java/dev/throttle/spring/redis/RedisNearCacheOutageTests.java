package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.DecisionSource;
import dev.throttle.GcraPolicy;
import dev.throttle.LockoutPolicy;
import dev.throttle.Policy;
import dev.throttle.SourcedDecision;
import dev.throttle.SourcedLimiter;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.testing.redis.RedisProcess;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * What an outage keeps, on a real Redis that is stopped: a key Redis refused before the outage stays
 * refused until its Retry-After (the near cache answers before any failure mode, even for a policy
 * whose near cache does not answer while Redis does), and the failure mode decides only for keys
 * nothing is known about, each policy under its own mode ({@code login} closed, {@code api} local).
 */
class RedisNearCacheOutageTests {

    private static final Policy LOGIN = LockoutPolicy.of("login", List.of(Duration.ofMinutes(10)));

    private static final Policy API = new GcraPolicy("api", 2, Duration.ofMinutes(10));

    private RedisProcess redis;

    private LettuceConnectionFactory connectionFactory;

    @BeforeEach
    void startRedis() {
        this.redis = RedisProcess.startStandalone();
        this.connectionFactory = this.redis.endpoint().newConnectionFactory();
    }

    @AfterEach
    void stopRedis() {
        this.connectionFactory.destroy();
        this.redis.stop();
    }

    @Test
    void refusedKeysStayRefusedThroughAnOutageAndEachPolicyFailsItsOwnWay() throws Exception {
        // login's near cache does not answer while Redis does: it only remembers, for an outage
        NearCacheSettings settings =
                NearCacheSettings.of(1000, Duration.ofMillis(50)).withPolicy("login", false);
        // a timeout a loaded machine's first calls meet (300 ms failed the first login call at load 17):
        // the outage below starts at the refused connection, not at a timeout
        RedisThrottleStore redisStore =
                new RedisThrottleStore(this.connectionFactory, "throttle", Duration.ofSeconds(2), null, settings);
        try (ResilientThrottleStore store = new ResilientThrottleStore(
                redisStore,
                FailureMode.LOCAL,
                new MemoryThrottleStore(TimeSource.system(), 1000),
                TimeSource.system(),
                Map.of("login", FailureMode.CLOSED))) {
            redisStore.eventsSubscribed().get(10, TimeUnit.SECONDS);
            assertThat(store.failureMode("login")).isEqualTo(FailureMode.CLOSED);
            assertThat(store.failureMode("api")).isEqualTo(FailureMode.LOCAL);
            SourcedLimiter login = (SourcedLimiter) store.limiter(LOGIN);
            SourcedLimiter api = (SourcedLimiter) store.limiter(API);
            // before the outage: mallory locked out of login, and over the api limit
            assertThat(login.tryAcquire("mallory", 1).allowed()).isTrue();
            SourcedDecision lockedOut = login.tryAcquireSourced("mallory", 1);
            assertThat(lockedOut.decision().allowed()).isFalse();
            assertThat(lockedOut.source())
                    .as("login asks Redis while it answers")
                    .isEqualTo(DecisionSource.store("redis"));
            api.tryAcquire("mallory", 1);
            api.tryAcquire("mallory", 1);
            assertThat(api.tryAcquire("mallory", 1).allowed()).isFalse();

            this.redis.stop();
            long retry = Long.MAX_VALUE;
            for (int i = 0; i < 5; i++) {
                SourcedDecision loginAnswer = login.tryAcquireSourced("mallory", 1);
                assertThat(loginAnswer.source()).isEqualTo(DecisionSource.nearCache("redis"));
                assertThat(loginAnswer.decision().allowed()).isFalse();
                assertThat(loginAnswer.decision().retryAfterMillis())
                        .isLessThanOrEqualTo(retry)
                        .isGreaterThan(Duration.ofMinutes(9).toMillis());
                retry = loginAnswer.decision().retryAfterMillis();
                SourcedDecision apiAnswer = api.tryAcquireSourced("mallory", 1);
                assertThat(apiAnswer.source()).isEqualTo(DecisionSource.nearCache("redis"));
                assertThat(apiAnswer.decision().allowed())
                        .as("the local fallback would have let mallory in")
                        .isFalse();
                Thread.sleep(20);
            }
            assertThat(store.isStoreDown()).isTrue();
            // unknown keys: each policy's own failure mode
            Decision closed = login.tryAcquire("alice", 1);
            assertThat(closed.allowed()).as("login fails closed").isFalse();
            assertThat(closed.retryAfterMillis()).isEqualTo(ResilientThrottleStore.CLOSED_RETRY_AFTER.toMillis());
            SourcedDecision local = api.tryAcquireSourced("bob", 1);
            assertThat(local.decision().allowed())
                    .as("api fails to the local store")
                    .isTrue();
            assertThat(local.source()).isEqualTo(DecisionSource.store("local"));
            // a reset during the outage forgets the key on this instance at once
            login.reset("mallory");
            assertThat(login.tryAcquireSourced("mallory", 1).source().isNearCache())
                    .isFalse();
        }
    }
}
