package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleObservationAutoConfiguration;
import dev.throttle.spring.observation.ThrottleDecisionObserver;
import dev.throttle.testing.redis.SharedRedis;
import io.lettuce.core.tracing.LettuceObservationContext;
import io.micrometer.common.KeyValue;
import io.micrometer.observation.Observation;
import io.micrometer.observation.Observation.ContextView;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.ObservationView;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisReactiveAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.observation.LettuceObservationAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * A trace of a decision on the Redis store, as an application gets it with one observation registry
 * and Spring Boot's auto-configuration (which gives Lettuce Micrometer's tracing): Lettuce's
 * observation of the script's {@code EVALSHA} is a child of {@code throttle.decision}, whether the
 * decision blocks or not, although the command is written and answered on Lettuce's own threads; and
 * a Redis call made outside a decision is a child of whatever the caller observes.
 */
class RedisDecisionTracingTests {

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    LettuceObservationAutoConfiguration.class,
                    DataRedisAutoConfiguration.class,
                    DataRedisReactiveAutoConfiguration.class,
                    ThrottleAutoConfiguration.class,
                    ThrottleObservationAutoConfiguration.class))
            .withPropertyValues(
                    "spring.data.redis.url=" + SharedRedis.endpoint().url(),
                    "throttle.store.type=redis",
                    // about traces, not about a slow first call of a fresh context on a busy machine
                    "throttle.store.redis.timeout=5s",
                    "throttle.policies.api.algorithm=gcra",
                    "throttle.policies.api.limit=100",
                    "throttle.policies.api.period=1m");

    @BeforeEach
    void flush() {
        SharedRedis.flush();
    }

    @Test
    void theRedisCommandOfABlockingDecisionIsAChildOfTheDecision() {
        TestObservationRegistry registry = TestObservationRegistry.create();
        this.contextRunner.withBean(ObservationRegistry.class, () -> registry).run((context) -> {
            Throttler throttler = context.getBean(Throttler.class);
            assertThat(throttler.tryAcquire("api", "alice").allowed()).isTrue();
            TestObservationRegistryAssert.assertThat(registry)
                    .hasNumberOfObservationsWithNameEqualTo(ThrottleDecisionObserver.NAME, 1);
            assertThat(redisCommandsUnder(registry, ThrottleDecisionObserver.NAME))
                    .singleElement()
                    .satisfies(RedisDecisionTracingTests::isTheScript);
        });
    }

    @Test
    void theRedisCommandOfANonBlockingDecisionIsAChildOfTheDecision() {
        TestObservationRegistry registry = TestObservationRegistry.create();
        this.contextRunner.withBean(ObservationRegistry.class, () -> registry).run((context) -> {
            Throttler throttler = context.getBean(Throttler.class);
            assertThat(throttler
                            .tryAcquireAsync("api", "bob", 1)
                            .toCompletableFuture()
                            .join()
                            .allowed())
                    .isTrue();
            TestObservationRegistryAssert.assertThat(registry)
                    .hasNumberOfObservationsWithNameEqualTo(ThrottleDecisionObserver.NAME, 1);
            assertThat(redisCommandsUnder(registry, ThrottleDecisionObserver.NAME))
                    .singleElement()
                    .satisfies(RedisDecisionTracingTests::isTheScript);
        });
    }

    @Test
    void eachOfSeveralDecisionsHasItsOwnRedisCommandAsItsChild() {
        TestObservationRegistry registry = TestObservationRegistry.create();
        this.contextRunner.withBean(ObservationRegistry.class, () -> registry).run((context) -> {
            Throttler throttler = context.getBean(Throttler.class);
            throttler.tryAcquire("api", "carol");
            throttler.tryAcquireAsync("api", "carol", 1).toCompletableFuture().join();
            throttler.tryAcquire("api", "dave");
            List<ContextView> decisions = new ArrayList<>();
            List<ContextView> parents = new ArrayList<>();
            TestObservationRegistryAssert.assertThat(registry).hasHandledContextsThatSatisfy((contexts) -> {
                for (Observation.Context observed : contexts) {
                    if (ThrottleDecisionObserver.NAME.equals(observed.getName())) {
                        decisions.add(observed);
                    } else if (observed instanceof LettuceObservationContext
                            && observed.getParentObservation() != null) {
                        parents.add(observed.getParentObservation().getContextView());
                    }
                }
            });
            assertThat(decisions).hasSize(3);
            assertThat(parents).as("one command per decision").containsExactlyInAnyOrderElementsOf(decisions);
        });
    }

    @Test
    void aRedisCallOutsideADecisionIsAChildOfTheCallersObservation() {
        TestObservationRegistry registry = TestObservationRegistry.create();
        this.contextRunner.withBean(ObservationRegistry.class, () -> registry).run((context) -> {
            Throttler throttler = context.getBean(Throttler.class);
            assertThat(throttler.tryAcquire("api", "erin").allowed()).isTrue();
            Observation.createNotStarted("checkout", registry).observe(() -> throttler.refund("api", "erin", 1));
            // the refund's script, and its news to the other instances' near caches
            assertThat(redisCommandsUnder(registry, "checkout"))
                    .extracting((command) ->
                            command.getLowCardinalityKeyValue("db.operation").getValue())
                    .containsExactlyInAnyOrder("EVALSHA", "PUBLISH");
        });
    }

    /** Lettuce's observations of the commands whose parent is an observation named {@code parent}. */
    private static List<Observation.Context> redisCommandsUnder(TestObservationRegistry registry, String parent) {
        List<Observation.Context> commands = new ArrayList<>();
        TestObservationRegistryAssert.assertThat(registry).hasHandledContextsThatSatisfy((contexts) -> {
            for (Observation.Context observed : contexts) {
                ObservationView parentObservation = observed.getParentObservation();
                if (observed instanceof LettuceObservationContext
                        && parentObservation != null
                        && parent.equals(parentObservation.getContextView().getName())) {
                    commands.add(observed);
                }
            }
        });
        return commands;
    }

    /** The policy's script: EVALSHA (EVAL only when Redis lost the script, which a fresh store has just loaded). */
    private static void isTheScript(Observation.Context command) {
        assertThat(command.getLowCardinalityKeyValue("db.operation"))
                .extracting(KeyValue::getValue)
                .isEqualTo("EVALSHA");
    }
}
