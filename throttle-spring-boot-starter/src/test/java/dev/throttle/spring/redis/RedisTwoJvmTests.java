package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.Limiter;
import dev.throttle.LockoutPolicy;
import dev.throttle.Policy;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.spring.redis.SecondJvmWorker.Mode;
import dev.throttle.spring.redis.SecondJvmWorker.Tally;
import dev.throttle.testing.redis.RedisEndpoint;
import dev.throttle.testing.redis.SharedRedis.WithRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Exactness across processes: this JVM and a second one ({@link SecondJvmWorker}, spawned with the
 * test classpath), each with its own connection and store, on one key of one Redis, for every
 * algorithm. Decisions use Redis time. The second JVM reports its tallies through Redis and its
 * outcome through its exit code; what it prints goes to a file that a failure quotes.
 */
@WithRedis
class RedisTwoJvmTests {

    static final int THREADS = 4;

    /** Per thread: each JVM alone asks for more than any quota below. */
    static final int CALLS_PER_THREAD = 300;

    /**
     * Nothing comes back within a test: a token bucket refilling one token an hour, GCRA's 500 a
     * week (one back every 20 minutes; 500 an hour would give one back every 7.2 s, within a slow
     * round), windows, logs and lockouts an hour long. So the quota is exactly what may pass.
     */
    static final List<Policy> POLICIES = List.of(
            TokenBucketPolicy.of("tb", 500, Duration.ofHours(1)),
            new GcraPolicy("gcra", 500, Duration.ofDays(7)),
            new FixedWindowPolicy("fw", 500, Duration.ofHours(1)),
            new SlidingLogPolicy("log", 10, Duration.ofHours(1), Duration.ofHours(1), 1.5),
            LockoutPolicy.of("lock", List.of(Duration.ofHours(1))));

    private LettuceConnectionFactory factory;

    private RedisClient client;

    private RedisCommands<String, String> redis;

    private Process second;

    private Path output;

    @BeforeEach
    void connect(RedisEndpoint endpoint, @TempDir Path dir) {
        this.factory = endpoint.newConnectionFactory();
        this.client = endpoint.newClient();
        StatefulRedisConnection<String, String> connection = this.client.connect();
        this.redis = connection.sync();
        this.output = dir.resolve("second-jvm.log");
    }

    @AfterEach
    void disconnect() {
        if (this.second != null) {
            this.second.destroyForcibly();
        }
        this.client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        this.factory.destroy();
    }

    @Test
    void twoJvmsAskingForMoreThanTheQuotaOnOneKeyGetExactlyTheQuotaBetweenThem(RedisEndpoint endpoint)
            throws Exception {
        startSecondJvm(endpoint, Mode.RACE);
        try (RedisThrottleStore store = new RedisThrottleStore(this.factory, "throttle", Duration.ofSeconds(10))) {
            for (int round = 0; round < POLICIES.size(); round++) {
                Policy policy = POLICIES.get(round);
                Limiter limiter = store.limiter(policy);
                limiter.peek("warm-up");
                awaitKey("ready:" + round);
                this.redis.set("go:" + round, "1");
                Tally here = SecondJvmWorker.hammer(limiter, SecondJvmWorker.HOT);
                Tally there = Tally.parse(awaitKey("tally:" + round));
                String tallies = policy.name() + ": passes/refusals " + here + " here, " + there + " in the other JVM";
                long askedByEach = (long) THREADS * CALLS_PER_THREAD;
                assertThat(askedByEach)
                        .as("each JVM alone asks for more than the quota")
                        .isGreaterThan(policy.quota());
                assertThat(here.calls()).as(tallies).isEqualTo(askedByEach);
                assertThat(there.calls())
                        .as("every call of the other JVM decided: " + tallies)
                        .isEqualTo(askedByEach);
                assertThat(here.passes() + there.passes()).as(tallies).isEqualTo(policy.quota());
            }
        }
        assertSecondJvmExitedCleanly();
    }

    @Test
    void whatOneJvmTookOfTheQuotaIsGoneForTheOther(RedisEndpoint endpoint) throws Exception {
        startSecondJvm(endpoint, Mode.FIRST);
        assertSecondJvmExitedCleanly();
        try (RedisThrottleStore store = new RedisThrottleStore(this.factory, "throttle", Duration.ofSeconds(10))) {
            for (int round = 0; round < POLICIES.size(); round++) {
                Policy policy = POLICIES.get(round);
                int share = SecondJvmWorker.firstShare(policy);
                Tally first = Tally.parse(this.redis.get("first:" + round));
                assertThat(first)
                        .as(policy.name() + ": the other JVM, first, got every call it asked for")
                        .isEqualTo(new Tally(share, 0));
                Tally then = SecondJvmWorker.take(store.limiter(policy), SecondJvmWorker.SPLIT, policy.quota());
                assertThat(then)
                        .as(policy.name() + ": this JVM, asking for the whole quota, got what was left")
                        .isEqualTo(new Tally(policy.quota() - share, share));
            }
        }
    }

    private void startSecondJvm(RedisEndpoint endpoint, Mode mode) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        this.second = new ProcessBuilder(
                        java,
                        "-Xmx256m",
                        "-cp",
                        System.getProperty("java.class.path"),
                        SecondJvmWorker.class.getName(),
                        endpoint.host(),
                        Integer.toString(endpoint.port()),
                        mode.name())
                .redirectErrorStream(true)
                .redirectOutput(this.output.toFile())
                .start();
    }

    private void assertSecondJvmExitedCleanly() throws Exception {
        assertThat(this.second.waitFor(60, TimeUnit.SECONDS))
                .as("the other JVM ended")
                .isTrue();
        assertThat(this.second.exitValue())
                .as("the other JVM's exit code; its output: " + secondJvmOutput())
                .isZero();
    }

    private String awaitKey(String key) throws Exception {
        long deadline = System.currentTimeMillis() + 120_000;
        String value;
        while ((value = this.redis.get(key)) == null) {
            if (!this.second.isAlive() || System.currentTimeMillis() > deadline) {
                throw new AssertionError("second JVM gave no " + key + " (exit code "
                        + (this.second.isAlive() ? "none, still running" : this.second.exitValue()) + "): "
                        + secondJvmOutput());
            }
            Thread.sleep(2);
        }
        return value;
    }

    private String secondJvmOutput() throws Exception {
        return Files.exists(this.output) ? Files.readString(this.output) : "";
    }
}
