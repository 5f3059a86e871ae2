package dev.throttle.spring.actuate;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleHealthAutoConfiguration;
import dev.throttle.testing.redis.RedisProcess;
import java.time.Duration;
import java.time.Instant;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.availability.ApplicationAvailabilityAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisReactiveAutoConfiguration;
import org.springframework.boot.health.actuate.endpoint.HealthEndpointGroups;
import org.springframework.boot.health.autoconfigure.actuate.endpoint.AvailabilityProbesAutoConfiguration;
import org.springframework.boot.health.autoconfigure.actuate.endpoint.HealthEndpointAutoConfiguration;
import org.springframework.boot.health.autoconfigure.application.AvailabilityHealthContributorAutoConfiguration;
import org.springframework.boot.health.autoconfigure.contributor.HealthContributorAutoConfiguration;
import org.springframework.boot.health.autoconfigure.registry.HealthContributorRegistryAutoConfiguration;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The {@code throttle} health indicator: up while the store answers, down with the failure mode in
 * force and since when while a real Redis is stopped, up again once it answers; kept out of the
 * readiness group unless the application includes it.
 */
class ThrottleStoreHealthTests {

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(
                    AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleHealthAutoConfiguration.class))
            .withPropertyValues(
                    "throttle.policies.api.algorithm=gcra",
                    "throttle.policies.api.limit=100",
                    "throttle.policies.api.period=1m");

    @Test
    void theMemoryStoreIsAlwaysUp() {
        this.contextRunner.run((context) -> {
            Health health = context.getBean(ThrottleStoreHealthIndicator.class).health();
            assertThat(health.getStatus()).isEqualTo(Status.UP);
            assertThat(health.getDetails()).containsEntry("store", "memory");
        });
    }

    @Test
    void theIndicatorCanBeSwitchedOff() {
        this.contextRunner
                .withPropertyValues("management.health.throttle.enabled=false")
                .run((context) -> assertThat(context).doesNotHaveBean(ThrottleStoreHealthIndicator.class));
    }

    @Test
    void aStoppedRedisIsDownWithTheFailureModeInForceAndSinceWhenThenUpOnceItAnswers() {
        try (RedisProcess redis = RedisProcess.startStandalone()) {
            this.contextRunner
                    .withConfiguration(AutoConfigurations.of(
                            DataRedisAutoConfiguration.class, DataRedisReactiveAutoConfiguration.class))
                    .withPropertyValues(
                            "throttle.store.type=redis",
                            "throttle.store.redis.timeout=2s",
                            "spring.data.redis.url=" + redis.endpoint().url())
                    .run((context) -> {
                        ThrottleStoreHealthIndicator indicator = context.getBean(ThrottleStoreHealthIndicator.class);
                        Throttler throttler = context.getBean(Throttler.class);
                        assertThat(throttler.tryAcquire("api", "alice").allowed())
                                .isTrue();
                        Health up = indicator.health();
                        assertThat(up.getStatus()).isEqualTo(Status.UP);
                        assertThat(up.getDetails())
                                .containsEntry("store", "redis")
                                .containsEntry("failure-mode", "local")
                                .doesNotContainKey("since");

                        Instant stopped = Instant.now();
                        redis.stop();
                        // a refused connection is an outage at once; the local failure mode decides meanwhile
                        Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> {
                            assertThat(throttler.tryAcquire("api", "alice").allowed())
                                    .isTrue();
                            return indicator.health().getStatus().equals(Status.DOWN);
                        });
                        Health down = indicator.health();
                        assertThat(down.getDetails())
                                .containsEntry("store", "redis")
                                .containsEntry("failure-mode", "local")
                                .containsKey("error");
                        assertThat(Instant.parse((String) down.getDetails().get("since")))
                                .isBetween(stopped.minusSeconds(1), Instant.now());
                        assertThat(down.getDetails().values().toString()).doesNotContain("alice");

                        redis.start();
                        // the next calls start the probe that ends the outage
                        Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> {
                            throttler.tryAcquire("api", "bob");
                            return indicator.health().getStatus().equals(Status.UP);
                        });
                    });
        }
    }

    @Test
    void theIndicatorIsNotInTheReadinessGroupUnlessIncluded() {
        ApplicationContextRunner probes = this.contextRunner
                .withConfiguration(AutoConfigurations.of(
                        ApplicationAvailabilityAutoConfiguration.class,
                        HealthContributorAutoConfiguration.class,
                        HealthContributorRegistryAutoConfiguration.class,
                        HealthEndpointAutoConfiguration.class,
                        AvailabilityHealthContributorAutoConfiguration.class,
                        AvailabilityProbesAutoConfiguration.class))
                .withPropertyValues("management.endpoint.health.probes.enabled=true");
        probes.run((context) -> {
            HealthEndpointGroups groups = context.getBean(HealthEndpointGroups.class);
            assertThat(groups.get("readiness").isMember("throttle")).isFalse();
            assertThat(groups.get("liveness").isMember("throttle")).isFalse();
            assertThat(groups.getPrimary().isMember("throttle")).isTrue();
        });
        probes.withPropertyValues("management.endpoint.health.group.readiness.include=readinessState,throttle")
                .run((context) -> assertThat(context.getBean(HealthEndpointGroups.class)
                                .get("readiness")
                                .isMember("throttle"))
                        .isTrue());
    }
}
