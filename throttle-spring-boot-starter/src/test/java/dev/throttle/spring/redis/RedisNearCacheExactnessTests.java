package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.LockoutPolicy;
import dev.throttle.Policy;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.SourcedDecision;
import dev.throttle.SourcedLimiter;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.testing.redis.SharedRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Exactness with the near cache on, for every algorithm: two instances (two stores on one real Redis,
 * each with its own connection, near cache and events subscription) and many threads hammering three
 * keys, giving back half of what they are allowed (a refund with the call's receipt, published to the
 * other instance), never admit one call more than the policy allows. And the near cache answers most of
 * the refusals, so it is really in play.
 */
class RedisNearCacheExactnessTests {

    private static final int THREADS_PER_INSTANCE = 6;

    private static final List<String> KEYS = List.of("mallory", "trudy", "eve");

    private static LettuceConnectionFactory factoryA;

    private static LettuceConnectionFactory factoryB;

    @BeforeAll
    static void connect() {
        factoryA = SharedRedis.endpoint().newConnectionFactory();
        factoryB = SharedRedis.endpoint().newConnectionFactory();
    }

    @AfterAll
    static void disconnect() {
        factoryA.destroy();
        factoryB.destroy();
    }

    /** Policies whose quota an hour cannot refill: what passes is exactly the quota, plus what was given back. */
    static List<Policy> policies() {
        return List.of(
                TokenBucketPolicy.of("tb", 5, Duration.ofHours(1)),
                new GcraPolicy("gcra", 5, Duration.ofHours(1)),
                new FixedWindowPolicy("fw", 5, Duration.ofHours(1)),
                new SlidingLogPolicy("log", 5, Duration.ofHours(1), Duration.ofHours(1), 1),
                LockoutPolicy.of("lock", List.of(Duration.ofHours(1))));
    }

    @ParameterizedTest
    @MethodSource("policies")
    void twoInstancesAndManyThreadsNeverAdmitMoreThanThePolicyAllows(Policy policy) throws Exception {
        SharedRedis.flush();
        NearCacheSettings settings = NearCacheSettings.of(10_000, Duration.ofMillis(50));
        try (RedisThrottleStore a =
                        new RedisThrottleStore(factoryA, "throttle", Duration.ofSeconds(5), null, settings);
                RedisThrottleStore b =
                        new RedisThrottleStore(factoryB, "throttle", Duration.ofSeconds(5), null, settings)) {
            a.eventsSubscribed().get(10, TimeUnit.SECONDS);
            b.eventsSubscribed().get(10, TimeUnit.SECONDS);
            SourcedLimiter[] instances = {(SourcedLimiter) a.limiter(policy), (SourcedLimiter) b.limiter(policy)};
            AtomicInteger[] admitted = new AtomicInteger[KEYS.size()];
            AtomicInteger[] givenBack = new AtomicInteger[KEYS.size()];
            for (int k = 0; k < KEYS.size(); k++) {
                admitted[k] = new AtomicInteger();
                givenBack[k] = new AtomicInteger();
            }
            AtomicLong local = new AtomicLong();
            AtomicLong refused = new AtomicLong();
            AtomicBoolean stop = new AtomicBoolean();
            CountDownLatch done = new CountDownLatch(2 * THREADS_PER_INSTANCE);
            List<Throwable> failures = new ArrayList<>();
            for (int t = 0; t < 2 * THREADS_PER_INSTANCE; t++) {
                SourcedLimiter limiter = instances[t % 2];
                Thread thread = new Thread(
                        () -> {
                            try {
                                ThreadLocalRandom random = ThreadLocalRandom.current();
                                while (!stop.get()) {
                                    int k = random.nextInt(KEYS.size());
                                    SourcedDecision answer = limiter.tryAcquireSourced(KEYS.get(k), 1);
                                    Decision decision = answer.decision();
                                    if (decision.allowed()) {
                                        admitted[k].incrementAndGet();
                                        // half of the allowed calls fail and give back what they took, on their
                                        // instance
                                        if (random.nextBoolean() && givenBack[k].get() < 20) {
                                            givenBack[k].incrementAndGet();
                                            limiter.refund(KEYS.get(k), 1, decision.receipt());
                                        }
                                    } else {
                                        refused.incrementAndGet();
                                        if (answer.source().isNearCache()) {
                                            local.incrementAndGet();
                                        }
                                    }
                                }
                            } catch (Throwable ex) {
                                synchronized (failures) {
                                    failures.add(ex);
                                }
                            } finally {
                                done.countDown();
                            }
                        },
                        "caller-" + t);
                thread.setDaemon(true);
                thread.start();
            }
            Thread.sleep(1500);
            stop.set(true);
            assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
            assertThat(failures).isEmpty();
            int quota = (policy instanceof LockoutPolicy) ? 1 : 5;
            for (int k = 0; k < KEYS.size(); k++) {
                int kept = admitted[k].get() - givenBack[k].get();
                assertThat(kept)
                        .as(policy.name() + " " + KEYS.get(k) + ": admitted " + admitted[k] + ", given back "
                                + givenBack[k])
                        .isBetween(1, quota);
            }
            assertThat(local.get())
                    .as("refusals answered by the near caches, of " + refused)
                    .isPositive();
        }
    }
}
