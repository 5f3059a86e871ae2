package dev.throttle.bench;

import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.memory.MemoryThrottleStore;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
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
 * A reservation (a call that may wait for its turn: {@link Limiter#reserve}) beside the plain decision
 * of the same policy ({@link Limiter#tryAcquire}) in the memory store, one call per operation, on the
 * same keys. {@link ReserveAB} runs the two in turn, round after round, and gives their ratio.
 *
 * <p>Two cases ({@link Subject#turn}):
 * <ul>
 * <li>{@code now}: the {@code high} regime on 100,000 Zipf keys, every key with room, so that a
 * reservation (up to {@link #NOW_WAIT}) is granted at once, as the plain decision is allowed: the
 * same work but for the path that decides it;</li>
 * <li>{@code later}: the {@code api} regime (100/s) on one hot key, reserved up to ten years ahead
 * ({@link #LATER_WAIT}), so that every reservation is granted for a later turn (the key's score moves
 * one interval further each call); the plain decision of the same key is refused, as that call would
 * be without a wait. GCRA only: the token bucket counts its debt in 23 bits, which one thread
 * exhausts within seconds.</li>
 * </ul>
 *
 * <p>The counters {@code allowed}, {@code waited} (granted for a later turn) and {@code rejected} show
 * which path each case took.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-XX:+UseG1GC"})
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
public class ReserveBenchmark {

    /** How long a call of the {@code now} case may wait: any wait at all takes the reservation's path. */
    static final long NOW_WAIT = Duration.ofSeconds(1).toMillis();

    /** How long a call of the {@code later} case may wait: the most a store takes (ten years). */
    static final long LATER_WAIT = Duration.ofDays(3650).toMillis();

    @State(Scope.Benchmark)
    public static class Subject {

        /** {@code gcra} or {@code token-bucket}. */
        @Param({"gcra", "token-bucket"})
        public String algorithm;

        /** {@code decide} ({@link Limiter#tryAcquire}) or {@code reserve} ({@link Limiter#reserve}). */
        @Param({"decide", "reserve"})
        public String call;

        /** {@code now} (keys with room) or {@code later} (one key reserved ahead); see the class. */
        @Param({"now"})
        public String turn;

        String[] sequence;

        Limiter limiter;

        long maxWait;

        boolean reserve;

        @Setup(Level.Trial)
        public void setUp() {
            boolean now = this.turn.equals("now");
            String keys = now ? "zipf" : "hot";
            this.sequence = Workload.sequence(keys, 42);
            this.limiter = new MemoryThrottleStore().limiter(Workload.policy(this.algorithm, now ? "high" : "api"));
            this.maxWait = now ? NOW_WAIT : LATER_WAIT;
            this.reserve = this.call.equals("reserve");
            for (String key : Workload.distinctKeys(keys)) {
                this.limiter.tryAcquire(key, 1);
            }
        }
    }

    /** Per thread: where it is in the key sequence, and how its calls went. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Outcomes {

        public long allowed;

        public long waited;

        public long rejected;

        int cursor;

        @Setup(Level.Trial)
        public void start() {
            this.cursor = ThreadLocalRandom.current().nextInt(Workload.SEQUENCE_LENGTH);
        }

        @Setup(Level.Iteration)
        public void clear() {
            this.allowed = 0;
            this.waited = 0;
            this.rejected = 0;
        }
    }

    @Benchmark
    public void call(Subject subject, Outcomes outcomes, Blackhole blackhole) {
        int at = outcomes.cursor;
        outcomes.cursor = (at + 1) & (Workload.SEQUENCE_LENGTH - 1);
        String key = subject.sequence[at];
        // one benchmark method for both calls, so that both run the same harness code; the branch is
        // constant per fork, and each fork runs one of them
        Decision decision =
                subject.reserve ? subject.limiter.reserve(key, 1, subject.maxWait) : subject.limiter.tryAcquire(key, 1);
        blackhole.consume(decision);
        if (!decision.allowed()) {
            outcomes.rejected++;
        } else if (decision.waitMillis() > 0) {
            outcomes.waited++;
        } else {
            outcomes.allowed++;
        }
    }
}
