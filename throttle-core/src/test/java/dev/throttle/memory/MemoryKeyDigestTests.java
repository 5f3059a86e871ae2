package dev.throttle.memory;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.FixedWindowPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.Throttler;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The key is attacker-chosen, so the memory store bounds what one costs: a key whose characters take
 * more than 64 bytes (more than 64 Latin-1 characters, or more than 32 others) is held as a 128-bit
 * digest, and a long key and its digest are one key. What a key then costs in bytes is measured, not
 * proven, by {@code MemoryFootprintTests} in {@code benchmarks/} ({@code benchmarks/run.sh}).
 */
class MemoryKeyDigestTests {

    @Test
    void aLongKeyAndItsDigestAreOneKeyAndTwoLongKeysAreTwo() {
        MemoryThrottleStore store = new MemoryThrottleStore(new ManualTimeSource(), 100);
        Throttler throttler = new Throttler(store, List.of(new FixedWindowPolicy("fw", 1, Duration.ofMinutes(1))));
        String longKey = "日".repeat(150);
        assertThat(throttler.tryAcquire("fw", longKey).allowed()).isTrue();
        assertThat(throttler.tryAcquire("fw", "日".repeat(150)).allowed())
                .as("the same key, another String")
                .isFalse();
        assertThat(throttler.tryAcquire("fw", "日".repeat(149) + "本").allowed()).isTrue();
        assertThat(throttler.tryAcquire("fw", "x".repeat(64)).allowed()).isTrue();
        assertThat(throttler.tryAcquire("fw", "x".repeat(65)).allowed()).isTrue();
        assertThat(throttler.peek("fw", longKey).allowed()).isFalse();
        throttler.reset("fw", longKey);
        assertThat(throttler.peek("fw", longKey).allowed()).isTrue();
        assertThat(MemoryKeys.of("x".repeat(64))).isEqualTo("x".repeat(64));
        assertThat(MemoryKeys.of("日".repeat(32))).isEqualTo("日".repeat(32));
        assertThat(MemoryKeys.of("x".repeat(65)))
                .isNotInstanceOf(String.class)
                .isEqualTo(MemoryKeys.of("x".repeat(65)));
        assertThat(MemoryKeys.of("日".repeat(33))).isNotInstanceOf(String.class);
    }
}
