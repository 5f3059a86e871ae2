package dev.throttle.bench;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.memory.MemoryThrottleStore;
import io.github.bucket4j.Bucket;
import io.github.bucket4j.ConsumptionProbe;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import org.openjdk.jmh.annotations.AuxCounters;
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
import org.openjdk.jmh.infra.Blackhole;

/**
 * One decision per operation, in memory: this project's store (each algorithm), Bucket4j's local
 * bucket per key held in a Caffeine cache, and the bare Caffeine {@code asMap().compute} that returns
 * its value. Every cache is configured alike (at most {@link MemoryThrottleStore#DEFAULT_MAXIMUM_KEYS}
 * keys, idle entries expire after {@link Workload#IDLE}), every implementation gets the same limit
 * ({@link Workload#REGIMES}), and every key has been touched once before measuring.
 *
 * <p>The whole result object (Decision, ConsumptionProbe, the cached value) goes to the blackhole, so
 * it escapes: the allocation figure is what a caller that keeps the decision pays. Run with
 * {@code -t 1} and {@code -t 2}; the counters {@code allowed} and {@code rejected} give the
 * allowed share.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-XX:+UseG1GC"})
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 2)
public class MemoryBenchmark {

    /** What decides: one per fork, so the call site stays monomorphic. */
    interface Decider {

        boolean decide(String key, Blackhole blackhole);
    }

    @State(Scope.Benchmark)
    public static class Subject {

        /**
         * {@code throttle-<algorithm>}, {@code bucket4j} (local bucket per key in Caffeine) or
         * {@code caffeine-compute} (the bare map).
         */
        @Param({
            "throttle-token-bucket",
            "throttle-gcra",
            "throttle-fixed-window",
            "throttle-lockout",
            "throttle-sliding-log",
            "bucket4j",
            "caffeine-compute"
        })
        public String impl;

        /** The limit regime (see {@link Workload#REGIMES}): {@code api} or {@code high}. */
        @Param({"api"})
        public String limit;

        /** {@code hot} (one key) or {@code zipf} (100,000 keys). */
        @Param({"hot", "zipf"})
        public String keys;

        String[] sequence;

        Decider decider;

        @Setup(Level.Trial)
        public void setUp() {
            this.sequence = Workload.sequence(this.keys, 42);
            this.decider = decider(this.impl, this.limit);
            Blackhole blackhole = new Blackhole(
                    "Today's password is swordfish. I understand instantiating Blackholes directly is dangerous.");
            for (String key : Workload.distinctKeys(this.keys)) {
                this.decider.decide(key, blackhole);
            }
        }
    }

    static Decider decider(String impl, String regime) {
        if (impl.startsWith("throttle-")) {
            Limiter limiter =
                    new MemoryThrottleStore().limiter(Workload.policy(impl.substring("throttle-".length()), regime));
            return (key, blackhole) -> {
                Decision decision = limiter.tryAcquire(key, 1);
                blackhole.consume(decision);
                return decision.allowed();
            };
        }
        if (impl.equals("bucket4j")) {
            Cache<String, Bucket> buckets = caffeine().build();
            io.github.bucket4j.Bandwidth bandwidth =
                    Workload.bucket4jConfiguration(regime).getBandwidths()[0];
            return (key, blackhole) -> {
                Bucket bucket = buckets.get(
                        key, (k) -> Bucket.builder().addLimit(bandwidth).build());
                ConsumptionProbe probe = bucket.tryConsumeAndReturnRemaining(1);
                blackhole.consume(probe);
                return probe.isConsumed();
            };
        }
        if (impl.equals("caffeine-compute")) {
            Cache<String, Object> cache = caffeine().build();
            Object present = Boolean.TRUE;
            BiFunction<String, Object, Object> same = (k, v) -> (v != null) ? v : present;
            return (key, blackhole) -> {
                blackhole.consume(cache.asMap().compute(key, same));
                return true;
            };
        }
        throw new IllegalArgumentException("unknown impl " + impl);
    }

    /** The cache configuration every implementation shares, as {@link MemoryThrottleStore} builds its own. */
    static Caffeine<Object, Object> caffeine() {
        return Caffeine.newBuilder()
                .maximumSize(MemoryThrottleStore.DEFAULT_MAXIMUM_KEYS)
                .expireAfterAccess(Workload.IDLE);
    }

    /** Per thread: where it is in the key sequence, and how its decisions went. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Outcomes {

        public long allowed;

        public long rejected;

        int cursor;

        @Setup(Level.Trial)
        public void start() {
            this.cursor = ThreadLocalRandom.current().nextInt(Workload.SEQUENCE_LENGTH);
        }

        @Setup(Level.Iteration)
        public void clear() {
            this.allowed = 0;
            this.rejected = 0;
        }
    }

    @Benchmark
    public void decide(Subject subject, Outcomes outcomes, Blackhole blackhole) {
        int at = outcomes.cursor;
        outcomes.cursor = (at + 1) & (Workload.SEQUENCE_LENGTH - 1);
        if (subject.decider.decide(subject.sequence[at], blackhole)) {
            outcomes.allowed++;
        } else {
            outcomes.rejected++;
        }
    }
}
