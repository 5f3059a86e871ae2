package dev.throttle.bench;

import dev.throttle.Limiter;
import dev.throttle.memory.MemoryThrottleStore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The memory store's decision when the caller keeps only {@code allowed()} (as a filter that only
 * branches on it would): whether escape analysis removes the {@link dev.throttle.Decision}. Compare
 * its {@code gc.alloc.rate.norm} with {@link MemoryBenchmark}, where the whole decision escapes.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-XX:+UseG1GC"})
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
public class EscapeBenchmark {

    @State(Scope.Benchmark)
    public static class Subject {

        @Param({"token-bucket", "gcra", "fixed-window", "lockout"})
        public String algorithm;

        @Param({"hot", "zipf"})
        public String keys;

        String[] sequence;

        Limiter limiter;

        @Setup(Level.Trial)
        public void setUp() {
            this.sequence = Workload.sequence(this.keys, 42);
            this.limiter = new MemoryThrottleStore().limiter(Workload.policy(this.algorithm, "api"));
            for (String key : Workload.distinctKeys(this.keys)) {
                this.limiter.tryAcquire(key, 1);
            }
        }
    }

    @State(Scope.Thread)
    public static class Cursor {

        int at;

        @Setup(Level.Trial)
        public void start() {
            this.at = ThreadLocalRandom.current().nextInt(Workload.SEQUENCE_LENGTH);
        }
    }

    @Benchmark
    public boolean allowedOnly(Subject subject, Cursor cursor) {
        int at = cursor.at;
        cursor.at = (at + 1) & (Workload.SEQUENCE_LENGTH - 1);
        return subject.limiter.tryAcquire(subject.sequence[at], 1).allowed();
    }
}
