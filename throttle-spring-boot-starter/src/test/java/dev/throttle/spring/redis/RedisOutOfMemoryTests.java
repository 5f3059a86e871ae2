package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.throttle.BoundPolicy;
import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.testing.redis.RedisProcess;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * A Redis that is full (maxmemory reached, {@code noeviction}) still answers reads but refuses every
 * write: for throttle that is one outage, not a flapping one. It starts with one WARN that names
 * Redis's own "OOM" error, lasts while Redis cannot write (the health probe writes, as decisions
 * do), and ends with one INFO once Redis can write again.
 */
class RedisOutOfMemoryTests {

    private static final FixedWindowPolicy POLICY = new FixedWindowPolicy("api", 1_000_000, Duration.ofHours(1));

    private RedisProcess redis;

    private LettuceConnectionFactory connectionFactory;

    private RedisClient client;

    private RedisCommands<String, String> commands;

    private ListAppender<ILoggingEvent> logs;

    @BeforeAll
    static void routeJavaLoggingToLogback() {
        // the failure policy lives in core and logs through System.Logger (java.util.logging here)
        if (!SLF4JBridgeHandler.isInstalled()) {
            SLF4JBridgeHandler.removeHandlersForRootLogger();
            SLF4JBridgeHandler.install();
        }
    }

    @BeforeEach
    void startRedis() {
        this.redis = new RedisProcess(RedisProcess.freePort(false), List.of("--maxmemory-policy", "noeviction"));
        this.redis.start();
        this.client = this.redis.endpoint().newClient();
        StatefulRedisConnection<String, String> connection = this.client.connect();
        this.commands = connection.sync();
        this.connectionFactory = this.redis.endpoint().newConnectionFactory();
        this.logs = new ListAppender<>();
        this.logs.start();
        ((Logger) LoggerFactory.getLogger("dev.throttle")).addAppender(this.logs);
    }

    @AfterEach
    void stopRedis() {
        ((Logger) LoggerFactory.getLogger("dev.throttle")).detachAppender(this.logs);
        this.connectionFactory.destroy();
        this.client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        this.redis.stop();
    }

    @Test
    void aFullRedisIsOneOutageNamedByItsOwnErrorAndEndsWhenRedisCanWriteAgain() {
        ResilientThrottleStore store = new ResilientThrottleStore(
                new RedisThrottleStore(this.connectionFactory, "throttle", Duration.ofSeconds(2)),
                FailureMode.LOCAL,
                new MemoryThrottleStore(TimeSource.system(), 10_000));
        BoundPolicy api = new Throttler(store, List.of(POLICY)).bound("api");
        await("Redis decides", () -> api.tryAcquire("warm-up", 1).allowed() && !store.isStoreDown());
        fill();
        this.logs.list.clear();

        // 300 decisions over several keys while Redis is full: each answered by the local fallback
        for (int i = 0; i < 300; i++) {
            Decision decision = api.tryAcquire("user-" + (i % 4), 1);
            assertThat(decision.allowed()).as("call %d: %s", i, decision).isTrue();
            if (i % 50 == 0) {
                sleep(20); // time for background probes to run, and fail, between calls
            }
        }
        assertThat(store.isStoreDown()).isTrue();
        assertThat(warnings())
                .singleElement()
                .satisfies((message) -> assertThat(message).contains("OOM command not allowed"));
        assertThat(infos()).as("no probe that only reads ended the outage").isEmpty();

        this.commands.configSet("maxmemory", "0");
        await("Redis decides again", () -> {
            api.tryAcquire("user-0", 1);
            return !store.isStoreDown();
        });
        // the outage ends before its INFO is written, on the probe's thread
        await("the end of the outage is logged", () -> !infos().isEmpty());
        assertThat(warnings()).hasSize(1);
        assertThat(infos())
                .singleElement()
                .satisfies((message) -> assertThat(message).contains("answers again"));
    }

    /**
     * Makes Redis hold more than its {@code maxmemory}, so that every write is refused and every
     * read still answered. (Filling it up to the limit would leave it hovering there: Redis checks
     * memory before a command runs, and a refused command frees its buffers.)
     */
    private void fill() {
        String value = "x".repeat(1024);
        for (int i = 0; i < 4096; i++) {
            this.commands.set("ballast:" + i, value);
        }
        this.commands.configSet("maxmemory", "1mb");
        assertThatThrownBy(() -> this.commands.set("one-more", "1"))
                .isInstanceOf(RedisCommandExecutionException.class)
                .hasMessageContaining("OOM");
        assertThat(this.commands.get("ballast:0")).as("reads still work").isNotNull();
    }

    private List<String> warnings() {
        return messages(Level.WARN);
    }

    private List<String> infos() {
        return messages(Level.INFO);
    }

    private List<String> messages(Level level) {
        return this.logs.list.stream()
                .filter((event) -> event.getLevel() == level)
                .map(ILoggingEvent::getFormattedMessage)
                .toList();
    }

    private static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime() - deadline).as(what).isNegative();
            sleep(20);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(ex);
        }
    }
}
