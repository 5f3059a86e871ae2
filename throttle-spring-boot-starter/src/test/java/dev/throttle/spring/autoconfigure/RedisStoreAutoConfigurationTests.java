package dev.throttle.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.Policy;
import dev.throttle.ThrottleListener;
import dev.throttle.ThrottleStore;
import dev.throttle.Throttler;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.testing.redis.RedisClusterProcesses;
import dev.throttle.testing.redis.RedisEndpoint;
import dev.throttle.testing.redis.SharedRedis;
import io.lettuce.core.api.StatefulRedisConnection;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisReactiveAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * {@code throttle.store.type=redis} through the auto-configuration, on Spring Boot's own Redis
 * connection: standalone, down at startup, and a real three-master cluster.
 */
class RedisStoreAutoConfigurationTests {

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    DataRedisAutoConfiguration.class,
                    DataRedisReactiveAutoConfiguration.class,
                    ThrottleAutoConfiguration.class,
                    MetricsAutoConfiguration.class,
                    ThrottleMetricsAutoConfiguration.class))
            .withPropertyValues(
                    "throttle.store.type=redis",
                    "throttle.policies.api.algorithm=gcra",
                    "throttle.policies.api.limit=2",
                    "throttle.policies.api.period=1m");

    /**
     * A generous timeout for tests about where state lives, not about a slow first call of a freshly
     * started context on a busy machine (a cold start that the failure mode answers is RedisStoreWarmUpTests').
     */
    private static final String SETTLED = "throttle.store.redis.timeout=2s";

    @BeforeEach
    void flush() {
        SharedRedis.flush();
    }

    @Test
    void decisionsLiveInRedisUnderTheKeyPrefixWithTheDefaultFailureModeLocal() {
        RedisEndpoint redis = SharedRedis.endpoint();
        this.contextRunner
                .withPropertyValues("spring.data.redis.url=" + redis.url(), SETTLED)
                .run((context) -> {
                    assertThat(context).hasSingleBean(ResilientThrottleStore.class);
                    ResilientThrottleStore store = context.getBean(ResilientThrottleStore.class);
                    assertThat(store.kind()).isEqualTo("redis");
                    assertThat(store.failureMode()).isEqualTo(FailureMode.LOCAL);
                    Throttler throttler = context.getBean(Throttler.class);
                    assertThat(throttler.tryAcquire("api", "alice").allowed()).isTrue();
                    try (var client = redis.newClient();
                            StatefulRedisConnection<String, String> connection = client.connect()) {
                        assertThat(connection.sync().exists("throttle:{api:alice}"))
                                .isEqualTo(1);
                        assertThat(connection.sync().pttl("throttle:{api:alice}"))
                                .isBetween(1L, 30_000L);
                    }
                    assertThat(throttler.tryAcquire("api", "alice").allowed()).isTrue();
                    assertThat(throttler.tryAcquire("api", "alice").allowed()).isFalse();
                });
    }

    @Test
    void twoApplicationsOnOneRedisShareOneLimit() {
        String url = SharedRedis.endpoint().url();
        this.contextRunner
                .withPropertyValues("spring.data.redis.url=" + url, SETTLED)
                .run((first) -> {
                    this.contextRunner
                            .withPropertyValues("spring.data.redis.url=" + url, SETTLED)
                            .run((second) -> {
                                assertThat(first.getBean(Throttler.class)
                                                .tryAcquire("api", "bob")
                                                .allowed())
                                        .isTrue();
                                assertThat(second.getBean(Throttler.class)
                                                .tryAcquire("api", "bob")
                                                .allowed())
                                        .isTrue();
                                assertThat(first.getBean(Throttler.class)
                                                .tryAcquire("api", "bob")
                                                .allowed())
                                        .isFalse();
                                assertThat(second.getBean(Throttler.class)
                                                .tryAcquire("api", "bob")
                                                .allowed())
                                        .isFalse();
                            });
                });
    }

    @Test
    void keyPrefixFailureModeAndTimeoutAreConfigurable() {
        RedisEndpoint redis = SharedRedis.endpoint();
        this.contextRunner
                .withPropertyValues(
                        "spring.data.redis.url=" + redis.url(),
                        "throttle.store.redis.key-prefix=shop",
                        "throttle.store.redis.failure-mode=closed",
                        "throttle.store.redis.timeout=2500ms")
                .run((context) -> {
                    ResilientThrottleStore store = context.getBean(ResilientThrottleStore.class);
                    assertThat(store.failureMode()).isEqualTo(FailureMode.CLOSED);
                    context.getBean(Throttler.class).tryAcquire("api", "carol");
                    try (var client = redis.newClient();
                            StatefulRedisConnection<String, String> connection = client.connect()) {
                        assertThat(connection.sync().exists("shop:{api:carol}")).isEqualTo(1);
                    }
                });
    }

    @Test
    void aRedisThatIsDownAtStartupIsNotAStartupFailureTheFailureModeDecides() {
        List<String> errors = new ArrayList<>();
        ThrottleListener audit = new ThrottleListener() {

            @Override
            public void onStoreError(Policy policy, RuntimeException error) {
                errors.add(policy.name());
            }
        };
        this.contextRunner
                .withPropertyValues(
                        "spring.data.redis.url=redis://127.0.0.1:1",
                        "throttle.store.redis.failure-mode=closed",
                        "throttle.store.redis.timeout=200ms")
                .withBean(ThrottleListener.class, () -> audit)
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    long start = System.nanoTime();
                    Decision decision = context.getBean(Throttler.class).tryAcquire("api", "dave");
                    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
                    assertThat(decision.allowed())
                            .as("closed: refused while Redis is down")
                            .isFalse();
                    assertThat(decision.retryAfterSeconds()).isEqualTo(1);
                    assertThat(errors).containsOnly("api");
                    assertThat(context.getBean(MeterRegistry.class)
                                    .get("throttle.decisions")
                                    .tags("policy", "api", "outcome", "error", "store", "redis")
                                    .counter()
                                    .count())
                            .isGreaterThanOrEqualTo(1);
                    assertThat(context.getBean(MeterRegistry.class)
                                    .find("throttle.decisions")
                                    .tags("policy", "api", "outcome", "rejected")
                                    .counters())
                            .as("the failure mode's refusal is counted once, as an error")
                            .allSatisfy((counter) -> assertThat(counter.count()).isZero());
                });
    }

    @Test
    void invalidRedisSettingsFailAtStartup() {
        this.contextRunner
                .withPropertyValues("throttle.store.redis.key-prefix={x}")
                .run(
                        (context) -> assertThat(context)
                                .hasFailed()
                                .getFailure()
                                .rootCause()
                                .hasMessage(
                                        "throttle.store.redis.key-prefix must be non-blank and free of '{' and '}', was '{x}'"));
        this.contextRunner
                .withPropertyValues("throttle.store.redis.timeout=0ms")
                .run((context) -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .rootCause()
                        .hasMessage("throttle.store.redis.timeout must be positive, was PT0S"));
    }

    @Test
    void maximumKeysIsCheckedOnceWithTheMemoryStoresAnswerForTheLocalFallback() {
        this.contextRunner
                .withPropertyValues("throttle.store.memory.maximum-keys=0")
                .run((context) -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .rootCause()
                        .hasMessage("throttle.store.memory.maximum-keys must be at least 1, was 0"));
    }

    @Test
    void aClusterFromSpringDataRedisClusterNodesDecidesRightInEverySlotRange() {
        RedisClusterProcesses cluster = RedisClusterProcesses.shared();
        cluster.flushAll();
        this.contextRunner
                .withPropertyValues(
                        "spring.data.redis.cluster.nodes=" + cluster.nodesProperty(), "throttle.store.redis.timeout=2s")
                .run((context) -> {
                    ThrottleStore store = context.getBean(ThrottleStore.class);
                    Throttler throttler = context.getBean(Throttler.class);
                    java.util.Set<Integer> nodesHit = new java.util.HashSet<>();
                    for (int i = 0; i < 60; i++) {
                        String key = "user-" + i;
                        int slot = io.lettuce.core.cluster.SlotHash.getSlot("throttle:{api:" + key + "}");
                        for (int range = 0; range < RedisClusterProcesses.SLOT_RANGES.length; range++) {
                            if (slot >= RedisClusterProcesses.SLOT_RANGES[range][0]
                                    && slot <= RedisClusterProcesses.SLOT_RANGES[range][1]) {
                                nodesHit.add(range);
                            }
                        }
                        assertThat(throttler.tryAcquire("api", key).allowed()).isTrue();
                        assertThat(throttler.tryAcquire("api", key).allowed()).isTrue();
                        assertThat(throttler.tryAcquire("api", key)).satisfies((decision) -> {
                            assertThat(decision.allowed()).isFalse();
                            assertThat(decision.retryAfterMillis()).isBetween(29_000L, 30_000L);
                        });
                    }
                    assertThat(nodesHit).containsExactlyInAnyOrder(0, 1, 2);
                    assertThat(((ResilientThrottleStore) store).isStoreDown()).isFalse();
                });
    }

    @Test
    void replicatedDurabilityOnAStandaloneRedisWithoutAReplicaIsAnsweredByTheFailureModeAndSaysWhy() {
        RedisEndpoint redis = SharedRedis.endpoint();
        this.contextRunner
                .withPropertyValues(
                        "spring.data.redis.url=" + redis.url(),
                        "throttle.store.redis.timeout=400ms",
                        "throttle.policies.api.durability=replicated")
                .run((context) -> {
                    Throttler throttler = context.getBean(Throttler.class);
                    ResilientThrottleStore store = context.getBean(ResilientThrottleStore.class);
                    // the shared Redis has no replica: nothing can confirm the write
                    assertThat(throttler.tryAcquire("api", "alice").allowed()).isTrue();
                    assertThat(store.isStoreDown()).isTrue();
                    assertThat(store.outageCause())
                            .get()
                            .satisfies((cause) -> assertThat(cause.getCause())
                                    .hasMessageContaining("NOTREPLICATED no replica confirmed the write within 300ms"));
                });
    }

    @Test
    void replicatedDurabilityIsRefusedAtStartupWhereItCannotHold() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.slots.algorithm=concurrency",
                        "throttle.policies.slots.limit=2",
                        "throttle.policies.slots.lease=30s",
                        "throttle.policies.slots.durability=replicated")
                .run((context) -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining(
                                "throttle.policies.slots.durability=replicated is for rate limits and " + "lockouts"));
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.api.plans.pro.limit=10",
                        "throttle.policies.api.plans.pro.durability=replicated")
                .run((context) -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .hasMessageContaining("wait, count and durability are the policy's"));
    }
}
