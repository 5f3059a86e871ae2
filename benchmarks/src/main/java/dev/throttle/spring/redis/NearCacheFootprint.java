package dev.throttle.spring.redis;

import dev.throttle.Decision;
import dev.throttle.ManualTimeSource;
import dev.throttle.resilience.RefusalMemory;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Locale;

/**
 * Heap retained per entry of the Redis store's near cache ({@link NearCache}, package-private, hence
 * this package): live heap after a full GC while the cache holds {@code n} refusals, minus the live
 * heap holding only their key strings, divided by {@code n}; and with the key strings counted, as an
 * entry keeps its caller's key alive. A frozen manual clock, so nothing expires while counting.
 *
 * <p>Usage: {@code java -Xmx2g -cp benchmarks.jar dev.throttle.spring.redis.NearCacheFootprint 100000}
 */
public final class NearCacheFootprint {

    private NearCacheFootprint() {}

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        String[] keys = new String[n];
        for (int i = 0; i < n; i++) {
            keys[i] = String.format(Locale.ROOT, "user-%07d@example.com", i);
        }
        long empty = used();
        NearCache cache = new NearCache(
                NearCacheSettings.of(n, Duration.ofMillis(50)),
                new ManualTimeSource(java.time.Instant.ofEpochMilli(1_700_000_000_000L)));
        RefusalMemory entries = cache.of("login");
        Object owner = new Object();
        Decision refusal = Decision.reject(10, 0, 60_000, 60_000);
        for (int i = 0; i < n; i++) {
            entries.remember(keys[i], 1, owner, refusal, entries.now(), entries.epoch());
        }
        long full = used();
        double perEntry = (full - empty) / (double) n;
        long keyBytes = 0;
        // a 24-character Latin-1 String: 24-byte String header and fields + 16-byte array header + 24 bytes
        keyBytes = 24 + 16 + 24;
        System.out.printf(
                Locale.ROOT,
                "entries=%d size=%d bytes_per_entry_without_key=%.1f with_its_key=%.1f"
                        + " (key: %d-character String, %d B) mb_at_%d=%.1f%n",
                n,
                cache.size(),
                perEntry,
                perEntry + keyBytes,
                keys[0].length(),
                keyBytes,
                n,
                n * (perEntry + keyBytes) / 1e6);
        if (entries.answer(keys[n - 1], 1, owner) == null) {
            throw new IllegalStateException("not remembered");
        }
    }

    private static long used() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(200);
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
