package dev.throttle.bench;

import dev.throttle.Limiter;
import dev.throttle.SourcedDecision;
import dev.throttle.SourcedLimiter;
import dev.throttle.spring.redis.NearCacheSettings;
import dev.throttle.spring.redis.RedisThrottleStore;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * One application instance under a mixed load at a fixed rate, for the two-instance measurement of
 * Redis commands per second with and without the near cache: {@code callers} threads together make
 * {@code rate} decisions per second (open loop: each waits for its next slot, so both runs make the
 * same calls), 90% of them for 1,000 abusers' keys, which are over their limit (GCRA, 10 a minute), and
 * 10% for keys drawn from 1,000,000 users, who are almost always let through. Runs {@code warm-up}
 * seconds, then {@code seconds} measured; the Redis side (commands per second) is read by the script
 * that starts the instances ({@code INFO commandstats} after {@code CONFIG RESETSTAT}).
 *
 * <p>Usage: {@code RedisMixed <port> <out-file> <name> <near-cache on|off> <callers> <rate> <warm-up-s> <seconds>}.
 */
public final class RedisMixed {

    private static final int ABUSERS = 1_000;

    private static final int USERS = 1_000_000;

    private RedisMixed() {}

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        String out = args[1];
        String name = args[2];
        boolean nearCache = args[3].equals("on");
        int callers = Integer.parseInt(args[4]);
        int rate = Integer.parseInt(args[5]);
        Duration warmup = Duration.ofSeconds(Long.parseLong(args[6]));
        Duration measured = Duration.ofSeconds(Long.parseLong(args[7]));
        LettuceConnectionFactory factory =
                new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", port));
        factory.afterPropertiesSet();
        factory.start();
        NearCacheSettings settings = nearCache
                ? NearCacheSettings.of(
                        NearCacheSettings.DEFAULT_MAXIMUM_KEYS, NearCacheSettings.DEFAULT_MINIMUM_RETRY_AFTER)
                : NearCacheSettings.disabled();
        try (RedisThrottleStore store = new RedisThrottleStore(
                        factory,
                        RedisThrottleStore.DEFAULT_KEY_PREFIX,
                        RedisThrottleStore.DEFAULT_TIMEOUT,
                        null,
                        settings);
                PrintStream results = new PrintStream(new FileOutputStream(out, true), true, StandardCharsets.UTF_8)) {
            SourcedLimiter limiter = (SourcedLimiter) store.limiter(Workload.policy("gcra", "abuse"));
            waitForRedis(limiter);
            for (int i = 0; i < ABUSERS; i++) {
                for (int n = 0; n < 100 && limiter.tryAcquire("abuser-" + i, 1).allowed(); n++) {
                    // over the limit
                }
            }
            long[] counts = run(limiter, callers, rate, warmup);
            long start = System.nanoTime();
            counts = run(limiter, callers, rate, measured);
            double seconds = (System.nanoTime() - start) / 1e9;
            String line = String.format(
                    Locale.ROOT,
                    "instance=%s near_cache=%s callers=%d target_rate=%d seconds=%.1f decisions=%d per_second=%.0f"
                            + " abuser_calls=%d refused=%d refused_locally=%d allowed=%d errors=%d",
                    name,
                    nearCache ? "on" : "off",
                    callers,
                    rate,
                    seconds,
                    counts[0],
                    counts[0] / seconds,
                    counts[1],
                    counts[2],
                    counts[3],
                    counts[4],
                    counts[5]);
            results.println(line);
            System.out.println(line);
        } finally {
            factory.destroy();
        }
        System.exit(0);
    }

    private static void waitForRedis(Limiter limiter) throws InterruptedException {
        for (int i = 0; i < 200; i++) {
            try {
                limiter.peek("warm-up");
                return;
            } catch (RuntimeException ex) {
                Thread.sleep(50);
            }
        }
    }

    /** Decisions, abuser calls, refused, refused locally, allowed, errors. */
    private static long[] run(SourcedLimiter limiter, int callers, int rate, Duration duration)
            throws InterruptedException {
        AtomicLong[] totals = new AtomicLong[6];
        for (int i = 0; i < totals.length; i++) {
            totals[i] = new AtomicLong();
        }
        long periodNanos = TimeUnit.SECONDS.toNanos(1) * callers / rate;
        long end = System.nanoTime() + duration.toNanos();
        Thread[] threads = new Thread[callers];
        for (int t = 0; t < callers; t++) {
            threads[t] = new Thread(
                    () -> {
                        long[] counts = new long[6];
                        ThreadLocalRandom random = ThreadLocalRandom.current();
                        long next = System.nanoTime() + random.nextLong(periodNanos);
                        while (next < end) {
                            long wait = next - System.nanoTime();
                            if (wait > 0) {
                                LockSupport.parkNanos(wait);
                            }
                            next += periodNanos;
                            boolean abuser = random.nextInt(10) < 9;
                            String key = abuser ? "abuser-" + random.nextInt(ABUSERS) : "user-" + random.nextInt(USERS);
                            try {
                                SourcedDecision answer = limiter.tryAcquireSourced(key, 1);
                                counts[0]++;
                                counts[1] += abuser ? 1 : 0;
                                if (answer.decision().allowed()) {
                                    counts[4]++;
                                } else {
                                    counts[2]++;
                                    counts[3] += answer.source().isNearCache() ? 1 : 0;
                                }
                            } catch (RuntimeException ex) {
                                counts[5]++;
                            }
                        }
                        for (int i = 0; i < counts.length; i++) {
                            totals[i].addAndGet(counts[i]);
                        }
                    },
                    "caller-" + t);
            threads[t].start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        long[] result = new long[6];
        for (int i = 0; i < result.length; i++) {
            result[i] = totals[i].get();
        }
        return result;
    }
}
