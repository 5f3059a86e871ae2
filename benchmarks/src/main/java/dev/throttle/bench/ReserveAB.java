package dev.throttle.bench;

import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import org.openjdk.jmh.profile.GCProfiler;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

/**
 * Interleaved rounds of {@link ReserveBenchmark}: in every round, for each case, the plain decision
 * and the reservation each run one JMH fork, one right after the other (decide first in odd rounds,
 * reserve first in even ones, so that a machine that gets busier or quieter during a round favours
 * neither), with {@code -prof gc}. Each round gives the reservation's cost ratio: the decision's
 * operations per second over the reservation's (1.10 is a reservation 10% dearer). The summary line of
 * a case is the median ratio, its lowest and highest, and each call's median operations per second
 * and bytes allocated per call, with the load average before and after.
 *
 * <p>Usage: {@code ReserveAB <out-file> <rounds> <warm-up-iterations> <warm-up-time> <iterations>
 * <iteration-time> <threads> <algorithm:turn>,...}, times as JMH writes them ({@code 1s},
 * {@code 200ms}). Each line of the out file is one fork; the summary lines start with {@code summary}.
 */
public final class ReserveAB {

    private static final String[] CALLS = {"decide", "reserve"};

    private ReserveAB() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 8) {
            System.err.println("usage: ReserveAB <out-file> <rounds> <warm-up-iterations> <warm-up-time> <iterations>"
                    + " <iteration-time> <threads> <algorithm:turn>,...");
            System.exit(2);
        }
        String out = args[0];
        int rounds = Integer.parseInt(args[1]);
        int warmupIterations = Integer.parseInt(args[2]);
        TimeValue warmupTime = TimeValue.fromString(args[3]);
        int iterations = Integer.parseInt(args[4]);
        TimeValue iterationTime = TimeValue.fromString(args[5]);
        int threads = Integer.parseInt(args[6]);
        String[] cases = args[7].split(",");
        double[][][] perSecond = new double[cases.length][CALLS.length][rounds];
        double[][][] bytes = new double[cases.length][CALLS.length][rounds];
        double[][] costRatio = new double[cases.length][rounds];
        String loadBefore = RedisAB.loadAverage();
        try (PrintStream results = new PrintStream(new FileOutputStream(out, true), true, StandardCharsets.UTF_8)) {
            for (int round = 0; round < rounds; round++) {
                for (int c = 0; c < cases.length; c++) {
                    String algorithm = cases[c].substring(0, cases[c].indexOf(':'));
                    String turn = cases[c].substring(cases[c].indexOf(':') + 1);
                    for (int step = 0; step < CALLS.length; step++) {
                        int call = (round % 2 == 0) ? step : CALLS.length - 1 - step;
                        Options options = new OptionsBuilder()
                                .include(ReserveBenchmark.class.getName() + ".call$")
                                .param("algorithm", algorithm)
                                .param("turn", turn)
                                .param("call", CALLS[call])
                                .forks(1)
                                .warmupIterations(warmupIterations)
                                .warmupTime(warmupTime)
                                .measurementIterations(iterations)
                                .measurementTime(iterationTime)
                                .threads(threads)
                                .addProfiler(GCProfiler.class)
                                .verbosity(VerboseMode.SILENT)
                                .build();
                        RunResult run = new Runner(options).runSingle();
                        double rate = run.getPrimaryResult().getScore();
                        perSecond[c][call][round] = rate;
                        bytes[c][call][round] = secondary(run, "gc.alloc.rate.norm");
                        double allowed = secondary(run, "allowed");
                        double waited = secondary(run, "waited");
                        double rejected = secondary(run, "rejected");
                        double total = Math.max(1e-9, allowed + waited + rejected);
                        String line = String.format(
                                Locale.ROOT,
                                "round=%d case=%s:%s call=%s threads=%d ops_per_second=%.0f error=%.0f bytes_per_op=%.1f"
                                        + " allowed_share=%.4f waited_share=%.4f rejected_share=%.4f load=%s",
                                round + 1,
                                algorithm,
                                turn,
                                CALLS[call],
                                threads,
                                rate,
                                run.getPrimaryResult().getScoreError(),
                                bytes[c][call][round],
                                allowed / total,
                                waited / total,
                                rejected / total,
                                RedisAB.loadAverage());
                        results.println(line);
                        System.out.println(line);
                    }
                    costRatio[c][round] = perSecond[c][0][round] / perSecond[c][1][round];
                }
            }
            for (int c = 0; c < cases.length; c++) {
                double[] sorted = RedisAB.sortedCopy(costRatio[c]);
                StringBuilder each = new StringBuilder();
                for (double ratio : costRatio[c]) {
                    each.append(each.length() == 0 ? "" : ",").append(String.format(Locale.ROOT, "%.3f", ratio));
                }
                String line = String.format(
                        Locale.ROOT,
                        "summary store=memory case=%s threads=%d rounds=%d cost_ratio_median=%.3f cost_ratio_min=%.3f"
                                + " cost_ratio_max=%.3f cost_ratios=%s decide_median_per_second=%.0f"
                                + " reserve_median_per_second=%.0f decide_bytes_per_op=%.1f reserve_bytes_per_op=%.1f"
                                + " load_before=%s load_after=%s",
                        cases[c],
                        threads,
                        rounds,
                        RedisAB.median(sorted),
                        sorted[0],
                        sorted[rounds - 1],
                        each,
                        RedisAB.median(RedisAB.sortedCopy(perSecond[c][0])),
                        RedisAB.median(RedisAB.sortedCopy(perSecond[c][1])),
                        RedisAB.median(RedisAB.sortedCopy(bytes[c][0])),
                        RedisAB.median(RedisAB.sortedCopy(bytes[c][1])),
                        loadBefore,
                        RedisAB.loadAverage());
                results.println(line);
                System.out.println(line);
            }
        }
    }

    private static double secondary(RunResult run, String name) {
        Result<?> result = run.getSecondaryResults().get(name);
        return (result != null) ? result.getScore() : Double.NaN;
    }
}
