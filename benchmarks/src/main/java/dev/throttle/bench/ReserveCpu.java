package dev.throttle.bench;

import dev.throttle.Decision;
import dev.throttle.Limiter;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;

/**
 * The memory store's reservation beside its plain decision by the CPU time of the calling thread,
 * for a machine whose cores other work shares: in one JVM (one per case, as {@link ReserveBenchmark}
 * sets the case up), blocks of calls of each in turn (the order alternating by block), each block
 * timed by the thread's own CPU clock, which does not run while the thread waits for a core. Each pair
 * of blocks gives a cost ratio (the reservation's CPU per call over the decision's); the summary is
 * their median, quartiles and extremes, with each call's median nanoseconds of CPU per call. The two
 * calls have their own loops, so each call site sees one method of the limiter.
 *
 * <p>Usage: {@code ReserveCpu <out-file> <warm-up-s> <blocks> <calls-per-block> <algorithm:turn>}.
 */
public final class ReserveCpu {

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    /** What the calls returned, so that none is left out as unused. */
    private static long sink;

    private static long allowed;

    private static long waited;

    private static long rejected;

    private ReserveCpu() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: ReserveCpu <out-file> <warm-up-s> <blocks> <calls-per-block> <algorithm:turn>");
            System.exit(2);
        }
        String out = args[0];
        long warmupNanos = (long) (Double.parseDouble(args[1]) * 1e9);
        int blocks = Integer.parseInt(args[2]);
        int calls = Integer.parseInt(args[3]);
        String name = args[4];
        ReserveBenchmark.Subject subject = new ReserveBenchmark.Subject();
        subject.algorithm = name.substring(0, name.indexOf(':'));
        subject.turn = name.substring(name.indexOf(':') + 1);
        subject.call = "decide";
        subject.setUp();
        Limiter limiter = subject.limiter;
        String[] sequence = subject.sequence;
        long maxWait = subject.maxWait;
        int cursor = 0;
        long warmEnd = System.nanoTime() + warmupNanos;
        while (System.nanoTime() < warmEnd) {
            cursor = decide(limiter, sequence, cursor, calls);
            cursor = reserve(limiter, sequence, cursor, calls, maxWait);
        }
        double[] decideNs = new double[blocks];
        double[] reserveNs = new double[blocks];
        double[] ratios = new double[blocks];
        long[] reserveOutcomes = new long[3];
        String loadBefore = RedisAB.loadAverage();
        for (int b = 0; b < blocks; b++) {
            for (int step = 0; step < 2; step++) {
                boolean reserveNow = (b % 2 == 0) == (step == 1);
                allowed = 0;
                waited = 0;
                rejected = 0;
                long cpu = THREADS.getCurrentThreadCpuTime();
                cursor = reserveNow
                        ? reserve(limiter, sequence, cursor, calls, maxWait)
                        : decide(limiter, sequence, cursor, calls);
                double ns = (THREADS.getCurrentThreadCpuTime() - cpu) / (double) calls;
                if (reserveNow) {
                    reserveNs[b] = ns;
                    reserveOutcomes[0] += allowed;
                    reserveOutcomes[1] += waited;
                    reserveOutcomes[2] += rejected;
                } else {
                    decideNs[b] = ns;
                }
            }
            ratios[b] = reserveNs[b] / decideNs[b];
        }
        double[] sorted = RedisAB.sortedCopy(ratios);
        long reserved = Math.max(1, reserveOutcomes[0] + reserveOutcomes[1] + reserveOutcomes[2]);
        String line = String.format(
                Locale.ROOT,
                "summary store=memory-cpu case=%s threads=1 blocks=%d calls_per_block=%d cost_ratio_median=%.3f"
                        + " cost_ratio_q1=%.3f cost_ratio_q3=%.3f cost_ratio_min=%.3f cost_ratio_max=%.3f"
                        + " decide_cpu_ns_median=%.1f reserve_cpu_ns_median=%.1f reserve_allowed_share=%.4f"
                        + " reserve_waited_share=%.4f reserve_rejected_share=%.4f load_before=%s load_after=%s sink=%d",
                name,
                blocks,
                calls,
                RedisAB.median(sorted),
                RedisAB.quartile(sorted, 1),
                RedisAB.quartile(sorted, 3),
                sorted[0],
                sorted[blocks - 1],
                RedisAB.median(RedisAB.sortedCopy(decideNs)),
                RedisAB.median(RedisAB.sortedCopy(reserveNs)),
                reserveOutcomes[0] / (double) reserved,
                reserveOutcomes[1] / (double) reserved,
                reserveOutcomes[2] / (double) reserved,
                loadBefore,
                RedisAB.loadAverage(),
                sink & 1);
        try (PrintStream results = new PrintStream(new FileOutputStream(out, true), true, StandardCharsets.UTF_8)) {
            results.println(line);
        }
        System.out.println(line);
        System.exit(Arrays.stream(ratios).anyMatch(Double::isNaN) ? 1 : 0);
    }

    private static int decide(Limiter limiter, String[] sequence, int from, int calls) {
        int cursor = from;
        long seen = 0;
        for (int i = 0; i < calls; i++) {
            Decision decision = limiter.tryAcquire(sequence[cursor], 1);
            cursor = (cursor + 1) & (Workload.SEQUENCE_LENGTH - 1);
            seen += count(decision);
        }
        sink += seen;
        return cursor;
    }

    private static int reserve(Limiter limiter, String[] sequence, int from, int calls, long maxWait) {
        int cursor = from;
        long seen = 0;
        for (int i = 0; i < calls; i++) {
            Decision decision = limiter.reserve(sequence[cursor], 1, maxWait);
            cursor = (cursor + 1) & (Workload.SEQUENCE_LENGTH - 1);
            seen += count(decision);
        }
        sink += seen;
        return cursor;
    }

    private static long count(Decision decision) {
        if (!decision.allowed()) {
            rejected++;
        } else if (decision.waitMillis() > 0) {
            waited++;
        } else {
            allowed++;
        }
        return decision.remaining();
    }
}
