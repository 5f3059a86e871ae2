package dev.throttle.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.throttle.FixedWindowPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.Policy;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.Throttler;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;
import org.openjdk.jol.info.GraphLayout;
import org.openjdk.jol.vm.VM;

/**
 * What one key costs the memory store, measured with JOL over the store's whole object graph: the
 * key is attacker-chosen, so its worst case is bounded. A key whose characters take more than 64
 * bytes (more than 64 Latin-1 characters, or more than 32 others) is held as a 128-bit digest, so no
 * key costs more than a 64-byte one ({@code MemoryKeyDigestTests} in throttle-core proves the
 * digest; this measures the bytes). A measurement, so not part of {@code ./mvnw verify}:
 * {@code benchmarks/run.sh} runs it ({@code -Pmeasure}) and keeps its figures in
 * {@code benchmarks/results/memory-footprint.txt}.
 */
class MemoryFootprintTests {

    static {
        // JOL reads this once, when it first looks at the VM: without it, it cannot walk records (the
        // policies are records)
        System.setProperty("jol.magicFieldOffset", "true");
    }

    private static final int KEYS = 3_000;

    /** Where the figures go, for benchmarks/run.sh to keep. */
    private static final Path RESULT = Path.of("target", "memory-footprint.txt");

    /** The bound docs/operations.md states, with the 64-bit HotSpot layout these tests run on. */
    private static final double WORST_BYTES_PER_KEY = 240;

    private static final List<Policy> POLICIES = List.of(
            new FixedWindowPolicy("packed", 5, Duration.ofMinutes(1)),
            new SlidingLogPolicy("log", 5, Duration.ofMinutes(1), Duration.ofSeconds(10), 1));

    @Test
    void noKeyCostsMoreThanTheBoundWhateverItsLengthOrScript() throws Exception {
        assumeTrue(VM.current().objectHeaderSize() == 12, "measured with compressed class pointers");
        Files.createDirectories(RESULT.getParent());
        Files.deleteIfExists(RESULT);
        List<IntFunction<String>> keys = List.of(
                (i) -> "user" + i + "@example.com",
                (i) -> "x".repeat(190) + String.format("%010d", i),
                (i) -> "日".repeat(190) + String.format("%010d", i),
                (i) -> "x".repeat(54) + String.format("%010d", i),
                (i) -> "日".repeat(23) + String.format("%010d", i));
        List<String> names = List.of("e-mail", "200 Latin-1", "200 CJK", "64 Latin-1", "33 CJK");
        for (Policy policy : POLICIES) {
            for (int k = 0; k < keys.size(); k++) {
                double perKey = bytesPerKey(policy, keys.get(k));
                String line = String.format(
                        Locale.ROOT,
                        "%s, %s keys: %.0f bytes per key (bound %.0f)",
                        policy.name(),
                        names.get(k),
                        perKey,
                        WORST_BYTES_PER_KEY);
                System.out.println(line);
                Files.writeString(
                        RESULT,
                        line + System.lineSeparator(),
                        StandardCharsets.UTF_8,
                        StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND);
                assertThat(perKey)
                        .as("%s, %s keys", policy.name(), names.get(k))
                        .isLessThanOrEqualTo(WORST_BYTES_PER_KEY);
            }
        }
    }

    /**
     * The bytes that the store's graph grew by per key: the classes of which it holds about one more
     * object per key (the key's characters, the entry, the cell, the digest, a log), and the hash
     * table. By class rather than by object: a walk reaches the JDK's own lazily grown caches through
     * the cache's lambdas, and a garbage collection may move objects between two walks.
     */
    private static double bytesPerKey(Policy policy, IntFunction<String> key) throws ClassNotFoundException {
        MemoryThrottleStore store = new MemoryThrottleStore(new ManualTimeSource(), 1_000_000);
        Throttler throttler = new Throttler(store, List.of(policy));
        // keyCount() drains Caffeine's buffers, whose pending tasks would otherwise be counted
        for (int i = 0; i < 1_000; i++) {
            throttler.tryAcquire(policy.name(), "warm-" + i);
        }
        assertThat(store.keyCount()).isEqualTo(1_000);
        GraphLayout before = GraphLayout.parseInstance(store);
        for (int i = 0; i < KEYS; i++) {
            throttler.tryAcquire(policy.name(), key.apply(i));
        }
        assertThat(store.keyCount()).isEqualTo(1_000 + KEYS);
        GraphLayout after = GraphLayout.parseInstance(store);
        Class<?> table = Class.forName("[Ljava.util.concurrent.ConcurrentHashMap$Node;");
        long bytes = 0;
        for (Class<?> type : after.getClasses()) {
            long more =
                    after.getClassCounts().count(type) - before.getClassCounts().count(type);
            if (more >= KEYS / 2 || type == table) {
                bytes += after.getClassSizes().count(type)
                        - before.getClassSizes().count(type);
            }
        }
        return bytes / (double) KEYS;
    }
}
