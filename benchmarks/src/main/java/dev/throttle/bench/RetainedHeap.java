package dev.throttle.bench;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.ManualTimeSource;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.memory.MemoryThrottleStore;
import io.github.bucket4j.Bandwidth;
import io.github.bucket4j.Bucket;
import java.lang.management.ManagementFactory;
import java.lang.ref.Reference;
import java.time.Instant;
import java.util.Locale;

/**
 * Heap retained per idle key: the live heap after a full GC while holding {@code n} keys, minus the
 * live heap holding only the key strings, divided by {@code n}. So the key string itself is
 * excluded, and so is everything the JVM held before. Every cache is configured as in
 * {@link MemoryBenchmark} (bounded to 1,000,000 keys, idle expiry) on a frozen clock, so nothing
 * expires while the keys are counted.
 *
 * <p>Usage: {@code java -cp benchmarks.jar dev.throttle.bench.RetainedHeap <impl> <n>} with impl
 * {@code caffeine-entry}, {@code bucket4j}, {@code throttle-<algorithm>} or
 * {@code throttle-sliding-log-full} (every key's log filled to the policy's bound). Prints one line:
 * {@code impl n keys-held bytes-per-key [note]}.
 */
public final class RetainedHeap {

    private RetainedHeap() {}

    public static void main(String[] args) throws Exception {
        String impl = args[0];
        int n = Integer.parseInt(args[1]);
        String[] keys = new String[n];
        for (int i = 0; i < n; i++) {
            keys[i] = Workload.key(i);
        }
        long before = liveHeap();
        Object held;
        long size;
        String note = "";
        if (impl.equals("caffeine-entry")) {
            Cache<String, Object> cache = Caffeine.newBuilder()
                    .maximumSize(MemoryThrottleStore.DEFAULT_MAXIMUM_KEYS)
                    .expireAfterAccess(Workload.IDLE)
                    .ticker(() -> 0L)
                    .build();
            for (String key : keys) {
                cache.asMap().compute(key, (k, v) -> (v != null) ? v : Boolean.TRUE);
            }
            cache.cleanUp();
            size = cache.estimatedSize();
            held = cache;
        } else if (impl.equals("bucket4j")) {
            Bandwidth bandwidth = Workload.bucket4jConfiguration("api").getBandwidths()[0];
            Cache<String, Bucket> cache = Caffeine.newBuilder()
                    .maximumSize(MemoryThrottleStore.DEFAULT_MAXIMUM_KEYS)
                    .expireAfterAccess(Workload.IDLE)
                    .ticker(() -> 0L)
                    .build();
            for (String key : keys) {
                cache.get(key, (k) -> Bucket.builder().addLimit(bandwidth).build())
                        .tryConsumeAndReturnRemaining(1);
            }
            cache.cleanUp();
            size = cache.estimatedSize();
            held = cache;
        } else if (impl.startsWith("throttle-")) {
            boolean full = impl.endsWith("-full");
            String algorithm =
                    impl.substring("throttle-".length(), full ? impl.length() - "-full".length() : impl.length());
            ManualTimeSource clock = new ManualTimeSource(Instant.parse("2026-01-01T00:00:00Z"));
            MemoryThrottleStore store = new MemoryThrottleStore(clock, MemoryThrottleStore.DEFAULT_MAXIMUM_KEYS);
            Limiter limiter = store.limiter(Workload.policy(algorithm, "api"));
            if (!full) {
                for (String key : keys) {
                    limiter.tryAcquire(key, 1);
                }
            } else {
                SlidingLogPolicy policy = (SlidingLogPolicy) limiter.policy();
                long[] numbers = policy.algorithm().numbersOf(policy); // {threshold, ttl, maxEntries, delays...}
                long[] delays = java.util.Arrays.copyOfRange(numbers, 3, numbers.length);
                int rounds = (int) numbers[2];
                long refused = 0;
                long advanced = 0;
                for (int round = 0; round < rounds; round++) {
                    // the wait this attempt needs after the previous one: the delay once past the threshold
                    int over = (round + 1) - policy.threshold();
                    long step = (over > 0) ? delays[Math.min(over, delays.length) - 1] : 0;
                    clock.advanceMillis(step);
                    advanced += step;
                    for (String key : keys) {
                        Decision decision = limiter.tryAcquire(key, 1);
                        refused += decision.allowed() ? 0 : 1;
                    }
                }
                note = "log bound " + rounds + " attempts per key; refused while filling " + refused
                        + "; first to last attempt " + advanced + " ms, within ttl "
                        + policy.ttl().toMillis() + " ms";
            }
            size = store.keyCount();
            held = store;
        } else {
            throw new IllegalArgumentException("unknown impl " + impl);
        }
        long after = liveHeap();
        Reference.reachabilityFence(held);
        Reference.reachabilityFence(keys);
        double perKey = (after - before) / (double) n;
        System.out.println(String.format(Locale.ROOT, "%s %d %d %.1f %s", impl, n, size, perKey, note)
                .trim());
    }

    private static long liveHeap() throws InterruptedException {
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 4; i++) {
            System.gc();
            Thread.sleep(100);
            used = Math.min(
                    used,
                    ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed());
        }
        return used;
    }
}
