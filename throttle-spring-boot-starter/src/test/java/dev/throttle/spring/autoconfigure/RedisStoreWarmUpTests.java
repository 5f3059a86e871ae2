package dev.throttle.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.throttle.Throttler;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.testing.redis.RedisEndpoint;
import dev.throttle.testing.redis.RedisKeys;
import dev.throttle.testing.redis.RedisMonitor;
import dev.throttle.testing.redis.RedisMonitor.Command;
import dev.throttle.testing.redis.SharedRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisReactiveAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The first burst after startup is exact, through the auto-configuration: by the time the context has started (so before
 * a web server would take its first request), every policy's decision path has run against Redis, on
 * a key no caller can have, and left nothing behind; a Redis that is down at startup is not waited
 * for, and the failure mode answers from the first call.
 */
class RedisStoreWarmUpTests {

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    DataRedisAutoConfiguration.class,
                    DataRedisReactiveAutoConfiguration.class,
                    ThrottleAutoConfiguration.class))
            .withPropertyValues(
                    "throttle.store.type=redis",
                    "throttle.policies.api.algorithm=gcra",
                    "throttle.policies.api.limit=2",
                    "throttle.policies.api.period=1m",
                    "throttle.policies.login.algorithm=lockout",
                    "throttle.policies.login.timeouts=1m");

    private ListAppender<ILoggingEvent> logs;

    @BeforeAll
    static void routeJavaLoggingToLogback() {
        if (!SLF4JBridgeHandler.isInstalled()) {
            SLF4JBridgeHandler.removeHandlersForRootLogger();
            SLF4JBridgeHandler.install();
        }
    }

    @BeforeEach
    void captureLogs() {
        SharedRedis.flush();
        this.logs = new ListAppender<>();
        this.logs.start();
        ((Logger) LoggerFactory.getLogger("dev.throttle")).addAppender(this.logs);
    }

    @AfterEach
    void stopCapturing() {
        ((Logger) LoggerFactory.getLogger("dev.throttle")).detachAppender(this.logs);
    }

    @Test
    void everyPolicysDecisionPathRanAgainstRedisByTheTimeTheContextHasStarted() {
        RedisEndpoint redis = SharedRedis.endpoint();
        RedisClient client = redis.newClient();
        try (RedisMonitor monitor = new RedisMonitor(redis);
                StatefulRedisConnection<String, String> connection = client.connect()) {
            this.contextRunner
                    .withPropertyValues("spring.data.redis.url=" + redis.url())
                    .run((context) -> {
                        connection.sync().echo("started");
                        monitor.awaitMarker("started");
                        List<Command> commands = monitor.commands().stream()
                                .filter(Command::isTopLevel)
                                .toList();
                        for (String policy : List.of("api", "login")) {
                            String key = "throttle:{" + policy + ":throttle-warm-up:";
                            assertThat(commands)
                                    .as(policy)
                                    .filteredOn((command) -> command.args().contains(key))
                                    .extracting((command) -> command.name().toUpperCase(Locale.ROOT))
                                    .contains("EVALSHA")
                                    // the reset: a DEL, or with the near cache the script that deletes and publishes
                                    .containsAnyOf("DEL", "EVAL");
                        }
                        assertThat(RedisKeys.matching(connection.sync(), "*"))
                                .as("nothing left behind")
                                .isEmpty();
                        ResilientThrottleStore store = context.getBean(ResilientThrottleStore.class);
                        assertThat(store.isStoreDown()).isFalse();
                        assertThat(context.getBean(Throttler.class)
                                        .tryAcquire("api", "alice")
                                        .allowed())
                                .isTrue();
                    });
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
        assertThat(this.logs.list)
                .filteredOn((event) -> event.getLevel().isGreaterOrEqual(Level.WARN))
                .isEmpty();
    }

    @Test
    void aRedisThatIsDownAtStartupIsNotWaitedForAndTheFailureModeAnswersFromTheFirstCall() {
        this.contextRunner
                .withPropertyValues("spring.data.redis.url=redis://127.0.0.1:1")
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    ResilientThrottleStore store = context.getBean(ResilientThrottleStore.class);
                    assertThat(store.isStoreDown())
                            .as("the failure mode applies from the first call")
                            .isTrue();
                    long call = System.nanoTime();
                    assertThat(context.getBean(Throttler.class)
                                    .tryAcquire("api", "alice")
                                    .allowed())
                            .isTrue();
                    assertThat(Duration.ofNanos(System.nanoTime() - call)).isLessThan(Duration.ofMillis(100));
                });
        assertThat(this.logs.list)
                .filteredOn((event) -> event.getLevel().isGreaterOrEqual(Level.WARN))
                .singleElement()
                .satisfies((event) -> {
                    String message = event.getFormattedMessage();
                    assertThat(message)
                            .startsWith("Throttle store 'redis' failed (its warm-up failed after ")
                            .contains(
                                    " ms: Redis tryAcquire for throttle policy 'api' failed: Unable to connect to Redis")
                            .endsWith("failure-mode local applies until it answers again");
                    Matcher took = Pattern.compile("after (\\d+) ms").matcher(message);
                    assertThat(took.find()).isTrue();
                    assertThat(Duration.ofMillis(Long.parseLong(took.group(1))))
                            .as("refused: not waited for up to 10 s")
                            .isLessThan(ThrottleStoreWarmUp.BOUND.dividedBy(2));
                });
    }
}
