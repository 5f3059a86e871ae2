package dev.throttle.bench;

import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Interleaved A/B runs against a local {@code redis-server}: each round runs the baseline (the first
 * variant, usually raw {@code EVALSHA}) before and after every other variant (B A1 B A2 B ... B), one
 * timed case each, in the same JVM and on the same server, so that every variant meets the same slice
 * of a shared machine's noise as the baseline cases around it; at least five rounds. Each case of a
 * variant gives a ratio to the mean of the two baseline cases that bracket it; the report is the
 * median ratio and its spread (lowest and highest of the rounds, and the interquartile range), so that
 * what one 3 s case moves by (±35% here) is seen rather than taken for a result. Beside decisions
 * per second, each case reports the CPU time the client JVM and the Redis server spent per decision
 * (both share the machine's cores, so on a CPU-bound loopback run their sum sets the throughput); that
 * ratio moves far less than throughput when other processes take the cores.
 *
 * <p>All variants are opened (and their JIT warmed on every variant for {@code warm-up} seconds) before
 * the first round. In the {@code abuse} regime no {@code FLUSHALL} is made between cases: every key is
 * first driven over its limit through the first non-baseline variant, and stays there, as an abuser
 * keeps it; there, a variant whose name starts with {@code nearcache-} is measured under
 * {@code MONITOR}, and the top-level commands it sent (every one, {@code PUBLISH} included) are
 * divided by its refused decisions. Otherwise {@code FLUSHALL} runs before each case, and after the
 * rounds each variant's calls are counted once ({@code trips} lines: round trips, scripts and commands
 * per call).
 *
 * <p>Usage: {@code RedisAB <port> <out-file> <warm-up-s> <case-s> <rounds> <regime> <keys> <callers>
 * <baseline> <variant>...}. Each line of the out file is one case; the summary lines start with
 * {@code summary}.
 */
public final class RedisAB {

    /** The harness's own commands, left out of what a call sends (subcommands count as their command). */
    private static final List<String> HARNESS_COMMANDS = List.of("config", "info", "echo", "monitor", "flushall");

    private RedisAB() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 10) {
            System.err.println(
                    "usage: RedisAB <port> <out-file> <warm-up-s> <case-s> <rounds> <regime> <keys> <callers>"
                            + " <baseline> <variant>...");
            System.exit(2);
        }
        int port = Integer.parseInt(args[0]);
        String out = args[1];
        Duration warmup = Duration.ofMillis((long) (Double.parseDouble(args[2]) * 1000));
        Duration measure = Duration.ofMillis((long) (Double.parseDouble(args[3]) * 1000));
        int rounds = Integer.parseInt(args[4]);
        String regime = args[5];
        String keys = args[6];
        int callers = Integer.parseInt(args[7]);
        List<String> variants = List.of(Arrays.copyOfRange(args, 8, args.length));
        String[] sequence = Workload.sequence(keys, 42);
        boolean abuse = regime.equals("abuse");
        List<RedisLoad.Subject> subjects = new ArrayList<>();
        try (PrintStream results = new PrintStream(new FileOutputStream(out, true), true, StandardCharsets.UTF_8)) {
            for (String variant : variants) {
                subjects.add(RedisLoad.Subject.open(variant, regime, port));
            }
            RedisLoad.admin(port, "FLUSHALL");
            if (abuse) {
                overLimit(subjects.get(1), Workload.distinctKeys(keys));
            }
            for (int v = 0; v < variants.size(); v++) {
                RedisLoad.run(subjects.get(v), sequence, callers, warmup, null);
            }
            double[][] perSecond = new double[variants.size()][rounds];
            double[][] ratioOf = new double[variants.size()][rounds];
            double[][] cpuPerDecision = new double[variants.size()][rounds];
            double[] commandsPerRefusal = new double[rounds];
            String header = String.format(
                    Locale.ROOT,
                    "regime=%s keys=%s callers=%d case_s=%.1f load=%s",
                    regime,
                    keys,
                    callers,
                    measure.toMillis() / 1000.0,
                    loadAverage());
            for (int round = 0; round < rounds; round++) {
                double before = 0;
                // B A1 B A2 B ... B: the baseline before and after each variant
                for (int step = 0; step < 2 * variants.size() - 1; step++) {
                    int v = (step % 2 == 0) ? 0 : 1 + step / 2;
                    if (!abuse) {
                        RedisLoad.admin(port, "FLUSHALL");
                    }
                    boolean monitored = abuse && variants.get(v).startsWith("nearcache-");
                    RedisLoad.Monitor monitor = monitored ? RedisLoad.Monitor.start(port) : null;
                    RedisLoad.admin(port, "CONFIG", "RESETSTAT");
                    long clientCpuBefore = RedisLoad.clientCpuNanos();
                    double serverCpuBefore = RedisLoad.serverCpuSeconds(port);
                    RedisLoad.Run run = RedisLoad.run(subjects.get(v), sequence, callers, measure, null);
                    double serverUs = (RedisLoad.serverCpuSeconds(port) - serverCpuBefore) * 1e6;
                    double cpuUs = ((RedisLoad.clientCpuNanos() - clientCpuBefore) / 1000.0 + serverUs)
                            / Math.max(1, run.decisions());
                    // Redis's own CPU per decision (INFO cpu), and the part of it inside scripts (INFO commandstats)
                    double redisUs = serverUs / Math.max(1, run.decisions());
                    double scriptUs = scriptMicros(port) / (double) Math.max(1, run.decisions());
                    cpuPerDecision[v][round] = (v == 0 && step > 0) ? cpuPerDecision[0][round] + cpuUs : cpuUs;
                    String commands = "";
                    if (monitor != null) {
                        long topLevel = monitor.stop();
                        monitor.close();
                        long refused = run.decisions() - run.allowed();
                        commandsPerRefusal[round] = topLevel / (double) Math.max(1, refused);
                        commands = String.format(
                                Locale.ROOT,
                                " top_level_commands=%d refused=%d commands_per_refused=%.5f",
                                topLevel,
                                refused,
                                commandsPerRefusal[round]);
                    }
                    double rate = run.decisions() / run.seconds();
                    if (v == 0) {
                        if (step > 0) {
                            ratioOf[step / 2][round] = perSecond[step / 2][round] / ((before + rate) / 2);
                        }
                        before = rate;
                        perSecond[0][round] = (step == 0) ? rate : perSecond[0][round] + rate;
                    } else {
                        perSecond[v][round] = rate;
                    }
                    String line = String.format(
                            Locale.ROOT,
                            "round=%d variant=%s %s decisions=%d errors=%d per_second=%.0f allowed_share=%.4f p50_us=%.0f p99_us=%.0f cpu_us_per_decision=%.2f"
                                    + " redis_cpu_us_per_decision=%.2f script_us_per_decision=%.2f%s",
                            round + 1,
                            variants.get(v),
                            header,
                            run.decisions(),
                            run.errors(),
                            rate,
                            run.allowed() / (double) Math.max(1, run.decisions()),
                            run.latency().getValueAtPercentile(50) / 1000.0,
                            run.latency().getValueAtPercentile(99) / 1000.0,
                            cpuUs,
                            redisUs,
                            scriptUs,
                            commands);
                    results.println(line);
                    System.out.println(line);
                }
            }
            for (int round = 0; round < rounds; round++) {
                perSecond[0][round] /= variants.size();
                cpuPerDecision[0][round] /= variants.size();
            }
            for (int v = 1; v < variants.size(); v++) {
                double[] ratios = ratioOf[v];
                StringBuilder each = new StringBuilder();
                for (int round = 0; round < rounds; round++) {
                    each.append(each.length() == 0 ? "" : ",")
                            .append(String.format(Locale.ROOT, "%.2f", ratios[round]));
                }
                double[] sorted = ratios.clone();
                Arrays.sort(sorted);
                // the round's CPU per decision over the mean of its baseline cases: the cost by CPU
                double[] cpuCost = new double[rounds];
                for (int round = 0; round < rounds; round++) {
                    cpuCost[round] = cpuPerDecision[v][round] / cpuPerDecision[0][round];
                }
                double[] cpuSorted = sortedCopy(cpuCost);
                String line = String.format(
                        Locale.ROOT,
                        "summary variant=%s baseline=%s %s rounds=%d ratio_median=%.3f ratio_min=%.3f ratio_max=%.3f ratio_iqr=%.3f-%.3f ratios=%s"
                                + " median_per_second=%.0f baseline_median_per_second=%.0f cpu_us_per_decision_median=%.2f"
                                + " baseline_cpu_us_per_decision_median=%.2f cpu_ratio_baseline_over_variant=%.3f"
                                + " cpu_cost_median=%.3f cpu_cost_min=%.3f cpu_cost_max=%.3f%s load_after=%s",
                        variants.get(v),
                        variants.get(0),
                        header,
                        rounds,
                        median(sorted),
                        sorted[0],
                        sorted[rounds - 1],
                        quartile(sorted, 1),
                        quartile(sorted, 3),
                        each,
                        median(sortedCopy(perSecond[v])),
                        median(sortedCopy(perSecond[0])),
                        median(sortedCopy(cpuPerDecision[v])),
                        median(sortedCopy(cpuPerDecision[0])),
                        median(sortedCopy(cpuPerDecision[0])) / median(sortedCopy(cpuPerDecision[v])),
                        median(cpuSorted),
                        cpuSorted[0],
                        cpuSorted[rounds - 1],
                        abuse && variants.get(v).startsWith("nearcache-")
                                ? String.format(
                                        Locale.ROOT,
                                        " commands_per_refused_median=%.5f commands_per_refused_max=%.5f",
                                        median(sortedCopy(commandsPerRefusal)),
                                        sortedCopy(commandsPerRefusal)[rounds - 1])
                                : "",
                        loadAverage());
                results.println(line);
                System.out.println(line);
            }
            if (!abuse) {
                for (int v = 0; v < variants.size(); v++) {
                    String line = roundTrips(port, subjects.get(v), variants.get(v), sequence, callers, header);
                    results.println(line);
                    System.out.println(line);
                }
            }
        } finally {
            for (RedisLoad.Subject subject : subjects) {
                subject.close();
            }
        }
        System.exit(0);
    }

    /**
     * What one call of a variant sends, counted outside the timed cases on emptied keys: the top-level
     * commands under {@code MONITOR} per call (round trips, for callers that wait for each answer),
     * and from {@code INFO commandstats} after {@code CONFIG RESETSTAT}, the scripts run per call
     * ({@code EVALSHA} and its kin), every command run inside Redis per call (the scripts' own
     * {@code redis.call}s included), and the microseconds Redis spent in the scripts per call.
     */
    private static String roundTrips(
            int port, RedisLoad.Subject subject, String variant, String[] sequence, int callers, String header)
            throws Exception {
        RedisLoad.admin(port, "FLUSHALL");
        RedisLoad.admin(port, "CONFIG", "RESETSTAT");
        long calls;
        long topLevel;
        try (RedisLoad.Monitor monitor = RedisLoad.Monitor.start(port)) {
            RedisLoad.Run run = RedisLoad.run(subject, sequence, callers, Duration.ofSeconds(5), new AtomicLong(2_000));
            calls = Math.max(1, run.decisions() + run.errors());
            topLevel = monitor.stop();
        }
        Map<String, Long> stats = RedisLoad.commandStats(port);
        // the time Redis spent in the scripts (their redis.calls included), from the same statistics
        long scriptMicros = scriptMicros(port);
        long scripts = 0;
        long inside = 0;
        for (Map.Entry<String, Long> stat : stats.entrySet()) {
            String name = stat.getKey();
            if (name.startsWith("eval") || name.startsWith("fcall")) {
                scripts += stat.getValue();
            }
            if (!HARNESS_COMMANDS.contains(name.contains("|") ? name.substring(0, name.indexOf('|')) : name)) {
                inside += stat.getValue();
            }
        }
        return String.format(
                Locale.ROOT,
                "trips variant=%s %s calls=%d round_trips_per_call=%.3f scripts_per_call=%.3f commands_per_call=%.3f"
                        + " script_us_per_call=%.2f commandstats=%s",
                variant,
                header,
                calls,
                topLevel / (double) calls,
                scripts / (double) calls,
                inside / (double) calls,
                scriptMicros / (double) calls,
                stats.toString().replace(" ", ""));
    }

    /** Drives every key over its limit: calls until refused (a few more than the limit, at most). */
    private static void overLimit(RedisLoad.Subject subject, String[] keys) throws Exception {
        for (String key : keys) {
            for (int i = 0; i < 100 && subject.caller.call(key); i++) {
                // until refused
            }
        }
    }

    static double[] sortedCopy(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted;
    }

    /** The first or third quartile, linearly interpolated. */
    static double quartile(double[] sorted, int which) {
        double at = (sorted.length - 1) * which / 4.0;
        int low = (int) Math.floor(at);
        int high = Math.min(sorted.length - 1, low + 1);
        return sorted[low] + (sorted[high] - sorted[low]) * (at - low);
    }

    static double median(double[] sorted) {
        int n = sorted.length;
        return (n % 2 == 1) ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    static String loadAverage() {
        try {
            String[] parts = Files.readString(Path.of("/proc/loadavg")).trim().split(" ");
            return parts[0] + "/" + parts[1] + "/" + parts[2];
        } catch (Exception ex) {
            return "unknown";
        }
    }

    /** Microseconds Redis spent in scripts since the last {@code CONFIG RESETSTAT} ({@code INFO commandstats}). */
    private static long scriptMicros(int port) throws java.io.IOException {
        long micros = 0;
        for (String line : RedisLoad.admin(port, "INFO", "commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_eval") || line.startsWith("cmdstat_fcall")) {
                int at = line.indexOf("usec=") + "usec=".length();
                micros += Long.parseLong(line.substring(at, line.indexOf(',', at)));
            }
        }
        return micros;
    }
}
