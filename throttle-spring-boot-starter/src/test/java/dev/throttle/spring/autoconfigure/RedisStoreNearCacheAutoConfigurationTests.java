package dev.throttle.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.spring.metrics.MicrometerThrottleListener;
import dev.throttle.spring.metrics.NearCacheMetrics;
import dev.throttle.spring.redis.RedisThrottleStore;
import dev.throttle.testing.redis.RedisProcess;
import dev.throttle.testing.redis.SharedRedis;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisReactiveAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The Redis store's own settings through the auto-configuration, on a real Redis: the near cache and its
 * per-policy switch (off by default for {@code count: failures}), failure modes per policy, the
 * metrics (a tag for refusals decided locally, the near cache's size) and the clock of the scripts,
 * with the start failing, naming the property, on a Redis that refuses {@code TIME} in scripts.
 */
class RedisStoreNearCacheAutoConfigurationTests {

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    DataRedisAutoConfiguration.class,
                    DataRedisReactiveAutoConfiguration.class,
                    ThrottleAutoConfiguration.class,
                    ThrottleMetricsAutoConfiguration.class))
            .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
            .withPropertyValues(
                    "throttle.store.type=redis",
                    "throttle.store.redis.timeout=2s",
                    "throttle.policies.login.algorithm=lockout",
                    "throttle.policies.login.timeouts=10m",
                    "throttle.policies.login.failure-mode=closed",
                    "throttle.policies.api.algorithm=gcra",
                    "throttle.policies.api.limit=1",
                    "throttle.policies.api.period=10m",
                    "throttle.policies.api.count=failures",
                    "throttle.policies.search.algorithm=token-bucket",
                    "throttle.policies.search.capacity=1",
                    "throttle.policies.search.refill-period=10m",
                    "throttle.policies.search.count=failures",
                    "throttle.policies.search.near-cache=true");

    @BeforeEach
    void flush() {
        SharedRedis.flush();
    }

    @Test
    void nearCacheFailureModesAndMetricsFollowTheProperties() {
        this.contextRunner
                .withPropertyValues(
                        "spring.data.redis.url=" + SharedRedis.endpoint().url())
                .run((context) -> {
                    ResilientThrottleStore store = context.getBean(ResilientThrottleStore.class);
                    assertThat(store.failureMode("login")).isEqualTo(FailureMode.CLOSED);
                    assertThat(store.failureMode("api")).isEqualTo(FailureMode.LOCAL);
                    RedisThrottleStore redis = (RedisThrottleStore) store.store();
                    Throttler throttler = context.getBean(Throttler.class);
                    assertThat(redis.nearCacheSettings().answersFor(throttler.policy("login")))
                            .isTrue();
                    assertThat(redis.nearCacheSettings().answersFor(throttler.policy("api")))
                            .as("count: failures gives back every success: off unless asked for")
                            .isFalse();
                    assertThat(redis.nearCacheSettings().answersFor(throttler.policy("search")))
                            .isTrue();
                    MeterRegistry registry = context.getBean(MeterRegistry.class);
                    context.getBean(MicrometerThrottleListener.class).bindTo(registry);
                    context.getBean(NearCacheMetrics.class).bindTo(registry);
                    assertThat(throttler.tryAcquire("login", "mallory").allowed())
                            .isTrue();
                    for (int i = 0; i < 5; i++) {
                        assertThat(throttler.tryAcquire("login", "mallory").allowed())
                                .isFalse();
                    }
                    assertThat(registry.get("throttle.decisions")
                                    .tags(
                                            "policy",
                                            "login",
                                            "outcome",
                                            "rejected",
                                            "store",
                                            "redis",
                                            "near-cache",
                                            "true")
                                    .counter()
                                    .count())
                            .isEqualTo(4);
                    assertThat(registry.get("throttle.decisions")
                                    .tags(
                                            "policy",
                                            "login",
                                            "outcome",
                                            "rejected",
                                            "store",
                                            "redis",
                                            "near-cache",
                                            "false")
                                    .counter()
                                    .count())
                            .isEqualTo(1);
                    assertThat(registry.get("throttle.near-cache.size").gauge().value())
                            .isEqualTo(1);
                });
    }

    @Test
    void aSpringSecurityIpPolicyThatCountsFailuresByDefaultHasTheNearCacheOffLikeCountFailures() {
        this.contextRunner
                .withPropertyValues(
                        "spring.data.redis.url=" + SharedRedis.endpoint().url(),
                        "throttle.policies.login-ip.algorithm=token-bucket",
                        "throttle.policies.login-ip.capacity=5",
                        "throttle.policies.login-ip.refill-period=1m",
                        "throttle.policies.all-ip.algorithm=token-bucket",
                        "throttle.policies.all-ip.capacity=5",
                        "throttle.policies.all-ip.refill-period=1m",
                        "throttle.policies.all-ip.count=all",
                        "throttle.security.authentication.ip-policy=login-ip")
                .run((context) -> {
                    RedisThrottleStore redis = (RedisThrottleStore)
                            context.getBean(ResilientThrottleStore.class).store();
                    Throttler throttler = context.getBean(Throttler.class);
                    assertThat(redis.nearCacheSettings().answersFor(throttler.policy("login-ip")))
                            .as("every successful login gives back what it took: off unless asked for")
                            .isFalse();
                    assertThat(redis.nearCacheSettings().answersFor(throttler.policy("all-ip")))
                            .isTrue();
                });
        this.contextRunner
                .withPropertyValues(
                        "spring.data.redis.url=" + SharedRedis.endpoint().url(),
                        "throttle.policies.login-ip.algorithm=token-bucket",
                        "throttle.policies.login-ip.capacity=5",
                        "throttle.policies.login-ip.refill-period=1m",
                        "throttle.policies.login-ip.count=all",
                        "throttle.security.authentication.ip-policy=login-ip")
                .run((context) -> {
                    RedisThrottleStore redis = (RedisThrottleStore)
                            context.getBean(ResilientThrottleStore.class).store();
                    assertThat(redis.nearCacheSettings()
                                    .answersFor(context.getBean(Throttler.class).policy("login-ip")))
                            .as("told to count every attempt: on")
                            .isTrue();
                });
    }

    @Test
    void theNearCacheCanBeTurnedOff() {
        this.contextRunner
                .withPropertyValues(
                        "spring.data.redis.url=" + SharedRedis.endpoint().url(),
                        "throttle.store.redis.near-cache.enabled=false")
                .run((context) -> {
                    RedisThrottleStore redis = (RedisThrottleStore)
                            context.getBean(ResilientThrottleStore.class).store();
                    assertThat(redis.nearCacheSettings().isEnabled()).isFalse();
                });
    }

    @Test
    void aRedisThatRefusesTimeInScriptsFailsTheStartNamingTheClockProperty() {
        try (RedisProcess noTime =
                new RedisProcess(RedisProcess.freePort(false), List.of("--rename-command", "TIME", "TIME_RENAMED"))) {
            noTime.start();
            this.contextRunner
                    .withPropertyValues(
                            "spring.data.redis.url=" + noTime.endpoint().url())
                    .run((context) -> assertThat(context)
                            .hasFailed()
                            .getFailure()
                            .rootCause()
                            .hasMessageContaining("Redis refuses TIME inside scripts")
                            .hasMessageContaining("set throttle.store.redis.clock=client"));
            ManualTimeSource clock = new ManualTimeSource(Instant.ofEpochMilli(1_700_000_000_000L));
            this.contextRunner
                    .withPropertyValues(
                            "spring.data.redis.url=" + noTime.endpoint().url(), "throttle.store.redis.clock=client")
                    .withBean(TimeSource.class, () -> clock)
                    .run((context) -> {
                        assertThat(context).hasNotFailed();
                        Throttler throttler = context.getBean(Throttler.class);
                        assertThat(throttler.tryAcquire("api", "alice").allowed())
                                .isTrue();
                        assertThat(throttler.tryAcquire("api", "alice").retryAfterMillis())
                                .as("decided in Redis on the application's time")
                                .isEqualTo(Duration.ofMinutes(10).toMillis());
                        clock.advance(Duration.ofMinutes(10));
                        assertThat(throttler.tryAcquire("api", "alice").allowed())
                                .isTrue();
                    });
        }
    }
}
