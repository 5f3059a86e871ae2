package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ConcurrencyPolicy;
import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.testing.redis.RedisEndpoint;
import dev.throttle.testing.redis.SharedRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * An instance killed while its calls hold concurrency slots ({@code kill -9}: no release, no
 * shutdown hook) does not hold them forever: every other instance is refused while the slots' lease
 * runs, and gets them back once it has run out, by Redis's clock.
 */
class RedisConcurrencyKilledInstanceTests {

    static final ConcurrencyPolicy REPORTS = new ConcurrencyPolicy("reports", 2, Duration.ofSeconds(4));

    @Test
    void slotsHeldByAKilledInstanceFreeThemselvesWhenTheirLeaseRunsOut() throws Exception {
        SharedRedis.flush();
        RedisEndpoint endpoint = SharedRedis.endpoint();
        Path output = Files.createTempFile("slot-holder", ".log");
        LettuceConnectionFactory factory = endpoint.newConnectionFactory();
        RedisClient client = endpoint.newClient();
        Process holder = null;
        try (StatefulRedisConnection<String, String> connection = client.connect();
                RedisThrottleStore store = new RedisThrottleStore(factory, "throttle", Duration.ofSeconds(10))) {
            RedisCommands<String, String> redis = connection.sync();
            String java =
                    Path.of(System.getProperty("java.home"), "bin", "java").toString();
            holder = new ProcessBuilder(
                            java,
                            "-Xmx256m",
                            "-cp",
                            System.getProperty("java.class.path"),
                            SlotHolder.class.getName(),
                            endpoint.host(),
                            Integer.toString(endpoint.port()))
                    .redirectErrorStream(true)
                    .redirectOutput(output.toFile())
                    .start();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (redis.get("slots-held") == null) {
                assertThat(holder.isAlive())
                        .as("the holder runs; its output: %s", Files.readString(output))
                        .isTrue();
                assertThat(System.nanoTime() - deadline)
                        .as("the holder took its slots")
                        .isNegative();
                Thread.sleep(10);
            }
            long heldAt = System.nanoTime();
            Limiter limiter = store.limiter(REPORTS);
            assertThat(limiter.tryAcquire("user", 1).allowed())
                    .as("both slots held by the other instance")
                    .isFalse();

            holder.destroyForcibly();
            assertThat(holder.waitFor(10, TimeUnit.SECONDS)).isTrue();
            assertThat(limiter.tryAcquire("user", 1).allowed())
                    .as("a killed instance releases nothing: its slots are held until their lease runs out")
                    .isFalse();

            Decision slot;
            while (!(slot = limiter.tryAcquire("user", 1)).allowed()) {
                assertThat(Duration.ofNanos(System.nanoTime() - heldAt))
                        .as("the slots came back once their lease ran out")
                        .isLessThan(REPORTS.lease().plusSeconds(5));
                Thread.sleep(50);
            }
            assertThat(Duration.ofNanos(System.nanoTime() - heldAt))
                    .as("not before the lease ran out")
                    .isGreaterThanOrEqualTo(REPORTS.lease().minusMillis(500));
            // the other slot was taken a moment after the first: its lease runs out a moment later
            Decision second;
            while (!(second = limiter.tryAcquire("user", 1)).allowed()) {
                assertThat(Duration.ofNanos(System.nanoTime() - heldAt))
                        .as("both slots came back")
                        .isLessThan(REPORTS.lease().plusSeconds(5));
                Thread.sleep(20);
            }
            limiter.refund("user", 1, second);
            limiter.refund("user", 1, slot);
        } finally {
            if (holder != null) {
                holder.destroyForcibly();
            }
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
            factory.destroy();
            Files.deleteIfExists(output);
        }
    }

    /** The other instance: takes both slots of {@link #REPORTS} for key {@code user}, says so, and never ends. */
    public static final class SlotHolder {

        private SlotHolder() {}

        /**
         * Holds the slots until killed.
         * @param args Redis host and port
         * @throws Exception on failure
         */
        public static void main(String[] args) throws Exception {
            RedisEndpoint endpoint = RedisEndpoint.of(args[0], Integer.parseInt(args[1]));
            LettuceConnectionFactory factory = endpoint.newConnectionFactory();
            RedisClient client = endpoint.newClient();
            RedisThrottleStore store = new RedisThrottleStore(factory, "throttle", Duration.ofSeconds(10));
            Limiter limiter = store.limiter(REPORTS);
            for (int i = 0; i < REPORTS.limit(); i++) {
                if (!limiter.tryAcquire("user", 1).allowed()) {
                    throw new IllegalStateException("slot " + i + " was not free");
                }
            }
            try (StatefulRedisConnection<String, String> connection = client.connect()) {
                connection.sync().set("slots-held", "2");
            }
            Thread.sleep(Long.MAX_VALUE);
        }
    }
}
