package dev.throttle.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Turns the raw results of one {@code run.sh} under {@code results/} into {@code summary.md}: the
 * tables, each row with its ratio against the peer and the baseline of the same run, and whether
 * each of the project's performance targets is met.
 *
 * <p>Usage: {@code Report <results-dir>}.
 */
public final class Report {

    private static final List<String> TARGETED = List.of("token-bucket", "gcra", "fixed-window", "lockout");

    private final Path dir;

    private final StringBuilder out = new StringBuilder();

    /** Target tables: title to row to column to verdict cell, in insertion order. */
    private final Map<String, Map<String, Map<String, String>>> grids = new LinkedHashMap<>();

    /** Most bytes per decision on a key that stays in the cache (the hot key), per algorithm. */
    private final Map<String, Double> maxBytesPerOp = new LinkedHashMap<>();

    /**
     * Most bytes per decision over 100,000 Zipf keys, where a rarely drawn key expires when idle and
     * its state is created again: shown beside the target, not judged by it.
     */
    private final Map<String, Double> maxBytesPerOpZipf = new LinkedHashMap<>();

    private final Map<String, Double> maxRoundTrips = new LinkedHashMap<>();

    private final Map<String, Double> maxJdbcRoundTrips = new LinkedHashMap<>();

    private static final String JDBC_GRID = "jdbc store: throughput ratio (target ≥ 3× the faster of Bucket4j's two "
            + "PostgreSQL proxy managers, every case) and round trips (target 1)";

    private int checked;

    private int missed;

    private Report(Path dir) {
        this.dir = dir;
    }

    public static void main(String[] args) throws IOException {
        Path dir = Path.of(args[0]);
        Report report = new Report(dir);
        report.memory();
        report.escape();
        report.retained();
        report.redis();
        report.jdbc();
        report.reservations();
        report.http();
        report.targets();
        Files.writeString(dir.resolve("summary.md"), report.out.toString(), StandardCharsets.UTF_8);
        System.out.print(report.out);
    }

    // ---------------------------------------------------------------- memory

    /** One JMH row: the primary score and its secondaries, by (impl, keys). */
    record Jmh(double opsPerSecond, double error, double bytesPerOp, double allowed, double rejected) {

        double allowedShare() {
            double total = this.allowed + this.rejected;
            return (total > 0) ? this.allowed / total : Double.NaN;
        }
    }

    private Map<String, Jmh> readJmh(String file) throws IOException {
        Path path = this.dir.resolve(file);
        Map<String, Jmh> rows = new LinkedHashMap<>();
        if (!Files.exists(path)) {
            return rows;
        }
        List<String> lines = Files.readAllLines(path);
        List<String> header = csv(lines.get(0));
        int benchmark = header.indexOf("Benchmark");
        int score = header.indexOf("Score");
        int error = header.indexOf("Score Error (99.9%)");
        int impl = header.indexOf("Param: impl");
        int keys = header.indexOf("Param: keys");
        Map<String, Map<String, double[]>> byCase = new LinkedHashMap<>();
        for (String line : lines.subList(1, lines.size())) {
            List<String> cells = csv(line);
            String name = cells.get(benchmark);
            String metric = name.contains(":") ? name.substring(name.indexOf(':') + 1) : "";
            String key = cells.get(impl) + "|" + cells.get(keys);
            byCase.computeIfAbsent(key, (k) -> new LinkedHashMap<>())
                    .put(metric, new double[] {number(cells.get(score)), number(cells.get(error))});
        }
        byCase.forEach((key, metrics) -> rows.put(
                key,
                new Jmh(
                        metrics.get("")[0],
                        metrics.get("")[1],
                        value(metrics, "gc.alloc.rate.norm"),
                        value(metrics, "allowed"),
                        value(metrics, "rejected"))));
        return rows;
    }

    private static double value(Map<String, double[]> metrics, String name) {
        double[] v = metrics.get(name);
        return (v != null) ? v[0] : Double.NaN;
    }

    private void memory() throws IOException {
        this.out.append("## Memory store: decisions per second (JMH, `-prof gc`)\n\n");
        this.out.append(
                "Ratios are against rows of the same run: **vs B4j** = Bucket4j local bucket per key in Caffeine, "
                        + "**vs map** = the bare Caffeine `asMap().compute` returning its value (regime-independent: measured once, "
                        + "in the `api` invocation). B/op = `gc.alloc.rate.norm`. allowed = share of decisions allowed.\n\n");
        for (String regime : Workload.REGIMES) {
            for (int threads : new int[] {1, 2}) {
                Map<String, Jmh> rows = readJmh("memory-" + regime + "-t" + threads + ".csv");
                if (rows.isEmpty()) {
                    continue;
                }
                Map<String, Jmh> base = readJmh("memory-api-t" + threads + ".csv");
                this.out.append(String.format(
                        Locale.ROOT,
                        "### Regime `%s` (%s), %d thread%s\n\n",
                        regime,
                        regime.equals("api") ? "100/s per key, burst 100" : "1,000,000/s per key, burst 1,000,000",
                        threads,
                        (threads == 1) ? "" : "s"));
                this.out.append("| implementation | hot key M ops/s | vs B4j | vs map | B/op | allowed "
                        + "| 100k Zipf M ops/s | vs B4j | vs map | B/op | allowed |\n");
                this.out.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
                for (String impl : orderedImpls(rows)) {
                    this.out.append("| ").append(impl);
                    for (String keys : List.of("hot", "zipf")) {
                        Jmh row = rows.get(impl + "|" + keys);
                        Jmh peer = rows.get("bucket4j|" + keys);
                        Jmh map = base.get("caffeine-compute|" + keys);
                        if (row == null) {
                            this.out.append(" | | | | | ");
                            continue;
                        }
                        double vsPeer = ratio(row, peer);
                        double vsMap = ratio(row, map);
                        this.out.append(String.format(
                                Locale.ROOT,
                                " | %s%s | %s | %s | %.0f | %s",
                                mops(row.opsPerSecond),
                                Double.isNaN(row.error) ? "" : " ± " + mops(row.error),
                                fmt(vsPeer),
                                fmt(vsMap),
                                row.bytesPerOp,
                                percent(row.allowedShare())));
                        String algorithm = impl.startsWith("throttle-") ? impl.substring("throttle-".length()) : null;
                        if (threads == 2 && algorithm != null && TARGETED.contains(algorithm)) {
                            check(
                                    "Memory store, 2 threads: throughput ratio (target ≥ 1.5× Bucket4j, ≥ 2× Caffeine compute)",
                                    algorithm + ", " + regime,
                                    keys + " vs B4j",
                                    vsPeer,
                                    1.5,
                                    true);
                            check(
                                    "Memory store, 2 threads: throughput ratio (target ≥ 1.5× Bucket4j, ≥ 2× Caffeine compute)",
                                    algorithm + ", " + regime,
                                    keys + " vs map",
                                    vsMap,
                                    2.0,
                                    true);
                        }
                        if (algorithm != null) {
                            (keys.equals("hot") ? this.maxBytesPerOp : this.maxBytesPerOpZipf)
                                    .merge(algorithm, row.bytesPerOp, Math::max);
                        }
                    }
                    this.out.append(" |\n");
                }
                this.out.append("\nM ops/s = millions of decisions per second, ± the 99.9% error JMH reports.\n\n");
            }
        }
    }

    private void escape() throws IOException {
        Path path = this.dir.resolve("memory-escape.csv");
        if (!Files.exists(path)) {
            return;
        }
        List<String> lines = Files.readAllLines(path);
        List<String> header = csv(lines.get(0));
        int benchmark = header.indexOf("Benchmark");
        int score = header.indexOf("Score");
        int algorithm = header.indexOf("Param: algorithm");
        int keys = header.indexOf("Param: keys");
        Map<String, double[]> rows = new LinkedHashMap<>();
        for (String line : lines.subList(1, lines.size())) {
            List<String> cells = csv(line);
            String name = cells.get(benchmark);
            String key = cells.get(algorithm) + "|" + cells.get(keys);
            double[] row = rows.computeIfAbsent(key, (k) -> new double[2]);
            if (!name.contains(":")) {
                row[0] = number(cells.get(score));
            } else if (name.endsWith(":gc.alloc.rate.norm")) {
                row[1] = number(cells.get(score));
            }
        }
        this.out.append("### Memory store, 1 thread, regime `api`, caller keeps only `allowed()`\n\n");
        this.out.append(
                "The same decision as above, but the benchmark returns only `decision.allowed()`: where the JIT inlines "
                        + "the whole decision, escape analysis removes the `Decision` (32 B, see `layouts.txt`).\n\n");
        this.out.append("| algorithm | keys | M ops/s | B/op |\n|---|---|--:|--:|\n");
        rows.forEach((key, row) -> this.out.append(String.format(
                Locale.ROOT,
                "| %s | %s | %s | %.0f |\n",
                key.substring(0, key.indexOf('|')),
                key.substring(key.indexOf('|') + 1),
                mops(row[0]),
                row[1])));
        this.out.append('\n');
    }

    private static List<String> orderedImpls(Map<String, Jmh> rows) {
        List<String> impls = new ArrayList<>();
        for (String key : rows.keySet()) {
            String impl = key.substring(0, key.indexOf('|'));
            if (!impls.contains(impl)) {
                impls.add(impl);
            }
        }
        List<String> ordered = new ArrayList<>();
        for (String algorithm : Workload.ALGORITHMS) {
            if (impls.contains("throttle-" + algorithm)) {
                ordered.add("throttle-" + algorithm);
            }
        }
        for (String impl : impls) {
            if (!ordered.contains(impl)) {
                ordered.add(impl);
            }
        }
        return ordered;
    }

    private static double ratio(Jmh row, Jmh other) {
        return (other == null) ? Double.NaN : row.opsPerSecond / other.opsPerSecond;
    }

    // ---------------------------------------------------------------- retained heap

    private void retained() throws IOException {
        Path path = this.dir.resolve("retained.txt");
        if (!Files.exists(path)) {
            return;
        }
        Map<String, String[]> rows = new LinkedHashMap<>();
        for (String line : Files.readAllLines(path)) {
            if (!line.isBlank()) {
                String[] cells = line.trim().split(" ", 5);
                rows.put(cells[0], cells);
            }
        }
        double caffeine = rows.containsKey("caffeine-entry") ? number(rows.get("caffeine-entry")[3]) : Double.NaN;
        double bucket4j = rows.containsKey("bucket4j") ? number(rows.get("bucket4j")[3]) : Double.NaN;
        this.out.append("## Memory store: heap retained per idle key\n\n");
        this.out.append("Live heap after a full GC holding n keys, minus the live heap holding only the key strings, "
                + "divided by n (so the key string is excluded); caches bounded to 1,000,000 keys on a frozen clock; "
                + "`api` regime; each row in its own JVM.\n\n");
        this.out.append(
                "| implementation | keys | held | bytes per key | vs bare Caffeine entry | vs Bucket4j | note |\n");
        this.out.append("|---|--:|--:|--:|--:|--:|---|\n");
        for (String[] cells : rows.values()) {
            double perKey = number(cells[3]);
            this.out.append(String.format(
                    Locale.ROOT,
                    "| %s | %s | %s | %.0f | %s | %s | %s |\n",
                    cells[0],
                    cells[1],
                    cells[2],
                    perKey,
                    fmt(perKey / caffeine),
                    fmt(perKey / bucket4j),
                    (cells.length > 4) ? cells[4] : ""));
            String impl = cells[0];
            if (impl.startsWith("throttle-") && TARGETED.contains(impl.substring("throttle-".length()))) {
                check(
                        "Memory store: per key (targets ≤ 32 B allocated per decision, ≤ 150 B retained per idle key)",
                        impl.substring("throttle-".length()),
                        "B retained per idle key",
                        perKey,
                        150,
                        false);
            }
        }
        this.out.append('\n');
    }

    // ---------------------------------------------------------------- redis

    private static Map<String, String> fields(String line) {
        Map<String, String> fields = new LinkedHashMap<>();
        for (String part : line.trim().split(" ")) {
            int eq = part.indexOf('=');
            if (eq > 0) {
                fields.put(part.substring(0, eq), part.substring(eq + 1));
            }
        }
        return fields;
    }

    private void redis() throws IOException {
        Path path = this.dir.resolve("redis.txt");
        if (!Files.exists(path)) {
            return;
        }
        List<Map<String, String>> rows = new ArrayList<>();
        for (String line : Files.readAllLines(path)) {
            if (line.startsWith("variant=")) {
                rows.add(fields(line));
            }
        }
        this.out.append("## Redis store: one decision per call (local redis-server, loopback)\n\n");
        this.out.append("Callers are threads that each wait for their answer. **vs EVALSHA** = the raw baseline "
                + "(`EVALSHA` of `return 1`, with the key, through Lettuce's async API on the shared native connection of the "
                + "same kind of Spring `LettuceConnectionFactory` the store uses); `evalsha-spring` is the same call through "
                + "Spring Data Redis's reactive connection, the path the store takes. **vs bare** = `evalsha-gcra-bare`, the "
                + "smallest GCRA script (`TIME`, `GET`, `SET PX`, an integer reply) on the raw baseline's path: the floor of any "
                + "store that keeps its state in a script and reads Redis time. **vs B4j** = Bucket4j's Lettuce CAS proxy "
                + "manager, same regime, keys and callers. Round trips = the client's top-level commands per decision under "
                + "`MONITOR`; commands = all commands Redis ran per decision (`INFO commandstats`, script-internal ones "
                + "included). client / server CPU = CPU time the client JVM / the Redis server spent per decision (they share "
                + "the 2 cores, so throughput is about 2 cores / their sum).\n\n");
        for (String regime : Workload.REGIMES) {
            List<Map<String, String>> inRegime =
                    rows.stream().filter((r) -> regime.equals(r.get("regime"))).toList();
            if (inRegime.isEmpty()) {
                continue;
            }
            this.out.append(String.format(Locale.ROOT, "### Regime `%s`\n\n", regime));
            this.out.append(
                    "| variant | keys | callers | decisions/s | vs EVALSHA | vs bare | vs B4j | p50 µs | p99 µs | baseline p99 µs "
                            + "| round trips | commands | client CPU µs | server CPU µs | allowed | errors |\n");
            this.out.append("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
            for (Map<String, String> row : inRegime) {
                Map<String, String> baseline = find(inRegime, "evalsha", row);
                Map<String, String> peer = find(inRegime, "bucket4j", row);
                Map<String, String> bare = find(inRegime, "evalsha-gcra-bare", row);
                double rate = number(row.get("per_second"));
                double vsBare = (bare != null) ? rate / number(bare.get("per_second")) : Double.NaN;
                double vsBaseline = (baseline != null) ? rate / number(baseline.get("per_second")) : Double.NaN;
                double vsPeer = (peer != null) ? rate / number(peer.get("per_second")) : Double.NaN;
                this.out.append(String.format(
                        Locale.ROOT,
                        "| %s | %s | %s | %,.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                        row.get("variant"),
                        row.get("keys"),
                        row.get("callers"),
                        rate,
                        fmt(vsBaseline),
                        fmt(vsBare),
                        fmt(vsPeer),
                        row.get("p50_us"),
                        row.get("p99_us"),
                        (baseline != null) ? baseline.get("p99_us") : "",
                        row.get("round_trips_per_decision"),
                        row.get("commands_per_decision"),
                        row.getOrDefault("client_cpu_us", ""),
                        row.getOrDefault("server_cpu_us", ""),
                        percent(number(row.get("allowed_share"))),
                        row.get("errors")));
                String variant = row.get("variant");
                if (variant.startsWith("throttle-")) {
                    String algorithm = variant.substring("throttle-".length());
                    this.maxRoundTrips.merge(
                            algorithm + ", " + regime, number(row.get("round_trips_per_decision")), Math::max);
                    int callers = Integer.parseInt(row.get("callers"));
                    String grid = "Redis store: throughput ratio (target ≥ 0.85× raw EVALSHA at 16 and 64 callers; "
                            + "≥ 20× Bucket4j on a hot key at 64 callers) and round trips (target 1)";
                    if (callers >= 16) {
                        check(
                                grid,
                                algorithm + ", " + regime,
                                row.get("keys") + " " + callers + " vs EVALSHA",
                                vsBaseline,
                                0.85,
                                true);
                    }
                    if (callers == 64 && row.get("keys").equals("hot")) {
                        check(grid, algorithm + ", " + regime, "hot 64 vs B4j", vsPeer, 20, true);
                    }
                }
            }
            this.out.append('\n');
        }
        Path ceiling = this.dir.resolve("redis-benchmark.csv");
        if (Files.exists(ceiling)) {
            this.out.append("### The server's own ceiling (`redis-benchmark`, same server, same run)\n\n");
            this.out.append("| test | clients | requests/s | p50 ms | p99 ms |\n|---|--:|--:|--:|--:|\n");
            for (String line : Files.readAllLines(ceiling)) {
                List<String> cells = csv(line);
                if (cells.size() >= 9 && !cells.get(0).equals("test")) {
                    // clients,test,rps,avg,min,p50,p95,p99,max (as run.sh writes them)
                    this.out.append(String.format(
                            Locale.ROOT,
                            "| %s | %s | %,.0f | %s | %s |\n",
                            cells.get(1),
                            cells.get(0),
                            number(cells.get(2)),
                            cells.get(5),
                            cells.get(7)));
                }
            }
            this.out.append('\n');
        }
    }

    private static Map<String, String> find(List<Map<String, String>> rows, String variant, Map<String, String> like) {
        for (Map<String, String> row : rows) {
            if (row.get("variant").equals(variant)
                    && row.get("keys").equals(like.get("keys"))
                    && row.get("callers").equals(like.get("callers"))) {
                return row;
            }
        }
        return null;
    }

    // ---------------------------------------------------------------- reservations and slots

    private static final String RESERVE_GRID = "Reservations and concurrency slots (targets: a reservation granted at "
            + "once costs ≤ 1.10× the plain decision of its policy, in one round trip on Redis; a slot taken and "
            + "released on Redis costs ≤ 2× one GCRA decision, in ≤ 2 round trips)";

    /** The step of {@code reserve.sh}: each call's cost beside the plain decision, as a median of rounds. */
    private void reservations() throws IOException {
        Path path = this.dir.resolve("reserve.txt");
        if (!Files.exists(path)) {
            return;
        }
        List<String> lines = Files.readAllLines(path);
        List<Map<String, String>> trips = new ArrayList<>();
        for (String line : lines) {
            if (line.startsWith("trips ")) {
                trips.add(fields(line));
            }
        }
        this.out.append("## Reservations and concurrency slots beside the plain decision (`reserve.sh`)\n\n");
        this.out.append(
                "Each call runs in turn with the plain decision it is compared with, in the same run. **Cost** = "
                        + "what this call takes over what the decision takes (1.10 is 10% dearer), per round, then the median "
                        + "and the lowest and highest of the rounds; **by calls/s** from throughput (memory: `ReserveAB`, one "
                        + "JMH fork each, 1 thread, the order alternating by round; Redis: `RedisAB`, the decision before and "
                        + "after each call), **by CPU** from CPU time per call, which moves far less when other work shares the "
                        + "cores (memory: `ReserveCpu`, the calling thread's CPU clock over alternating blocks in one JVM; Redis: "
                        + "the client JVM's and the server's CPU per call in the same `RedisAB` cases). `now`: keys with room "
                        + "(memory: the `high` regime on Zipf keys; Redis: `high`, one key), so a reservation is granted at once; "
                        + "`later`: one key over the `api` limit reserved up to ten years ahead, so every reservation is granted "
                        + "for a later turn, beside the plain decision of that key, which is refused. Round trips = top-level "
                        + "commands per call under `MONITOR`; scripts = `EVALSHA` per call, script µs = the time Redis spent in them "
                        + "per call (`INFO commandstats`).\n\n");
        for (String line : lines) {
            if (line.startsWith("#")) {
                this.out.append("    ").append(line).append('\n');
            }
        }
        this.out.append('\n');
        this.out.append(
                "| store | call | beside | callers | cost by calls/s | lowest–highest | cost by CPU | lowest–highest "
                        + "| this call / beside | B per call / beside | round trips | scripts | script µs / beside |\n");
        this.out.append("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
        for (String line : lines) {
            if (!line.startsWith("summary ")) {
                continue;
            }
            Map<String, String> row = fields(line);
            String store = row.get("store");
            if (store != null) {
                String name = row.get("case");
                String algorithm = name.substring(0, name.indexOf(':'));
                String turn = name.substring(name.indexOf(':') + 1);
                double cost = number(row.get("cost_ratio_median"));
                String range = fmt(number(row.get("cost_ratio_min"))) + "–" + fmt(number(row.get("cost_ratio_max")));
                boolean cpu = store.equals("memory-cpu");
                this.out.append(String.format(
                        Locale.ROOT,
                        "| memory | %s reserve, %s | decide | 1 thread | %s | %s | %s | %s | %s | %s | | | |\n",
                        algorithm,
                        turn,
                        cpu ? "" : fmt(cost),
                        cpu ? "" : range,
                        cpu ? fmt(cost) : "",
                        cpu ? range : "",
                        cpu
                                ? row.get("reserve_cpu_ns_median") + " / " + row.get("decide_cpu_ns_median") + " ns CPU"
                                : String.format(
                                        Locale.ROOT,
                                        "%,.0f / %,.0f per s",
                                        number(row.get("reserve_median_per_second")),
                                        number(row.get("decide_median_per_second"))),
                        cpu ? "" : row.get("reserve_bytes_per_op") + " / " + row.get("decide_bytes_per_op")));
                if (turn.equals("now")) {
                    check(
                            RESERVE_GRID,
                            "memory, " + algorithm + " reserve vs decide",
                            cpu ? "cost by CPU, 1 thread" : "cost by calls/s, 1 thread",
                            cost,
                            1.10,
                            false);
                }
                continue;
            }
            String variant = row.get("variant");
            String baseline = row.get("baseline");
            String callers = row.get("callers");
            // RedisAB gives the call's rate over the decision's: its cost is the inverse
            double cost = 1 / number(row.get("ratio_median"));
            double cpuCost = number(row.get("cpu_cost_median"));
            Map<String, String> trip = trips.stream()
                    .filter((t) -> variant.equals(t.get("variant")) && callers.equals(t.get("callers")))
                    .findFirst()
                    .orElse(Map.of());
            Map<String, String> baselineTrip = trips.stream()
                    .filter((t) -> baseline.equals(t.get("variant"))
                            && callers.equals(t.get("callers"))
                            && row.get("regime").equals(t.get("regime")))
                    .findFirst()
                    .orElse(Map.of());
            double roundTrips = number(trip.get("round_trips_per_call"));
            this.out.append(String.format(
                    Locale.ROOT,
                    "| redis | %s (%s) | %s | %s | %s | %s–%s | %s | %s–%s | %,.0f / %,.0f per s | | %s | %s | %s / %s |\n",
                    variant.substring("throttle-".length()),
                    row.get("regime"),
                    baseline.substring("throttle-".length()),
                    callers,
                    fmt(cost),
                    fmt(1 / number(row.get("ratio_max"))),
                    fmt(1 / number(row.get("ratio_min"))),
                    fmt(cpuCost),
                    fmt(number(row.get("cpu_cost_min"))),
                    fmt(number(row.get("cpu_cost_max"))),
                    number(row.get("median_per_second")),
                    number(row.get("baseline_median_per_second")),
                    trip.getOrDefault("round_trips_per_call", "–"),
                    trip.getOrDefault("scripts_per_call", "–"),
                    trip.getOrDefault("script_us_per_call", "–"),
                    baselineTrip.getOrDefault("script_us_per_call", "–")));
            String by = ", " + callers + " caller(s)";
            if (variant.equals("throttle-take-release")) {
                String name = "redis, take + release vs gcra";
                check(RESERVE_GRID, name, "cost by calls/s" + by, cost, 2.0, false);
                check(RESERVE_GRID, name, "cost by CPU" + by, cpuCost, 2.0, false);
                check(RESERVE_GRID, name, "round trips" + by, roundTrips, 2.0, false);
            } else if (variant.startsWith("throttle-reserve-") && !variant.startsWith("throttle-reserve-later-")) {
                String algorithm = variant.substring("throttle-reserve-".length());
                String name = "redis, " + algorithm + " reserve vs " + algorithm;
                check(RESERVE_GRID, name, "cost by calls/s" + by, cost, 1.10, false);
                check(RESERVE_GRID, name, "cost by CPU" + by, cpuCost, 1.10, false);
                check(RESERVE_GRID, name, "round trips" + by, roundTrips, 1.0, false);
            }
        }
        this.out.append('\n');
    }

    // ---------------------------------------------------------------- postgresql

    private void jdbc() throws IOException {
        Path path = this.dir.resolve("jdbc.txt");
        if (!Files.exists(path)) {
            return;
        }
        List<Map<String, String>> rows = new ArrayList<>();
        List<String> header = new ArrayList<>();
        for (String line : Files.readAllLines(path)) {
            if (line.startsWith("variant=")) {
                rows.add(fields(line));
            } else if (line.startsWith("# ")) {
                header.add(line.substring(2));
            }
        }
        this.out.append("## jdbc store: one decision per call (local PostgreSQL, loopback)\n\n");
        this.out.append("Callers are threads that each wait for their answer; every variant on a HikariCP pool of 10 "
                + "(Spring Boot's default). `throttle-*` = the jdbc store as the starter builds it by default (at most 4 of "
                + "the pool's connections, 1 s timeout, the database's clock); `throttle-*@10` the same with "
                + "`max-connections: 10`, shown, not judged. **vs SELECT** = `select-1`, one prepared "
                + "`SELECT` of the key per call on a pooled connection (the floor of any store that decides in one "
                + "statement). **vs B4j SFU** / **vs B4j lock** = Bucket4j's `PostgreSQLSelectForUpdateBasedProxyManager` / "
                + "`PostgreSQLadvisoryLockBasedProxyManager`, same limit, keys and callers. Round trips = the times the "
                + "client spoke after the server's `ReadyForQuery`, statements = the client's `Execute` and `Query` "
                + "messages, both per decision, counted by a wire-protocol relay in a short run after the timed one. client "
                + "/ server CPU = CPU time of the client JVM / of the PostgreSQL processes per decision (they share the 2 "
                + "cores).\n\n");
        for (String line : header) {
            this.out.append("- ").append(line).append('\n');
        }
        this.out.append('\n');
        for (String regime : Workload.REGIMES) {
            List<Map<String, String>> inRegime =
                    rows.stream().filter((r) -> regime.equals(r.get("regime"))).toList();
            if (inRegime.isEmpty()) {
                continue;
            }
            this.out.append(String.format(Locale.ROOT, "### Regime `%s`\n\n", regime));
            this.out.append("| variant | keys | callers | decisions/s | vs SELECT | vs B4j SFU | vs B4j lock | p50 µs "
                    + "| p99 µs | round trips | statements | client CPU µs | server CPU µs | allowed | errors |\n");
            this.out.append("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
            for (Map<String, String> row : inRegime) {
                double rate = number(row.get("per_second"));
                double vsSelect = ratioTo(rate, find(inRegime, "select-1", row));
                double vsForUpdate = ratioTo(rate, find(inRegime, "bucket4j-select-for-update", row));
                double vsLock = ratioTo(rate, find(inRegime, "bucket4j-advisory-lock", row));
                this.out.append(String.format(
                        Locale.ROOT,
                        "| %s | %s | %s | %,.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                        row.get("variant"),
                        row.get("keys"),
                        row.get("callers"),
                        rate,
                        fmt(vsSelect),
                        fmt(vsForUpdate),
                        fmt(vsLock),
                        row.get("p50_us"),
                        row.get("p99_us"),
                        row.get("round_trips_per_decision"),
                        row.get("statements_per_decision"),
                        row.get("client_cpu_us"),
                        row.get("server_cpu_us"),
                        percent(number(row.get("allowed_share"))),
                        row.get("errors")));
                String variant = row.get("variant");
                // judged: the store as the starter configures it (throttle-<algorithm>@<n> rows, with another
                // bound on its connections, are shown only)
                if (variant.startsWith("throttle-") && !variant.contains("@")) {
                    String name = variant.substring("throttle-".length()) + ", " + regime;
                    // the stricter of the two peers: the ratio to whichever Bucket4j manager was faster here
                    double vsFaster = Double.isNaN(vsForUpdate)
                            ? vsLock
                            : Double.isNaN(vsLock) ? vsForUpdate : Math.min(vsForUpdate, vsLock);
                    check(JDBC_GRID, name, row.get("keys") + " " + row.get("callers") + " vs B4j", vsFaster, 3, true);
                    this.maxJdbcRoundTrips.merge(name, number(row.get("round_trips_per_decision")), Math::max);
                }
            }
            this.out.append('\n');
        }
    }

    private static double ratioTo(double rate, Map<String, String> peer) {
        return (peer != null) ? rate / number(peer.get("per_second")) : Double.NaN;
    }

    // ---------------------------------------------------------------- http

    private void http() throws IOException {
        Path path = this.dir.resolve("http.txt");
        if (!Files.exists(path)) {
            return;
        }
        List<Map<String, String>> rows = new ArrayList<>();
        for (String line : Files.readAllLines(path)) {
            if (line.startsWith("mode=")) {
                rows.add(fields(line));
            }
        }
        this.out.append("## HTTP: sample app `GET /api/hello` (memory store), wrk on loopback\n\n");
        this.out.append(
                "Each round starts the app twice, `throttle.enabled=false` then throttled (a limit never reached), "
                        + "and measures both alike: the ratios are within a round (a pair), so the machine's state is shared. "
                        + "CPU = the app's CPU time over the measured seconds per request (steadier than requests/s when other "
                        + "work shares the cores).\n\n");
        this.out.append(
                "| round | mode | requests/s | CPU µs/request | p50 | p99 | non-2xx | RateLimit header | throttled / unthrottled (requests/s) | unthrottled / throttled (CPU per request) |\n"
                        + "|--:|---|--:|--:|--:|--:|--:|---|--:|--:|\n");
        List<Double> rpsRatios = new ArrayList<>();
        List<Double> cpuRatios = new ArrayList<>();
        long non2xx = 0;
        Map<String, Map<String, String>> plainByRound = new HashMap<>();
        for (Map<String, String> row : rows) {
            String pairRps = "";
            String pairCpu = "";
            if (row.get("mode").equals("throttled")) {
                non2xx += Long.parseLong(row.get("non2xx"));
                Map<String, String> plain = plainByRound.get(row.get("round"));
                if (plain != null) {
                    double ratio = number(row.get("rps")) / number(plain.get("rps"));
                    rpsRatios.add(ratio);
                    pairRps = fmt(ratio);
                    if (row.get("cpu_us") != null && plain.get("cpu_us") != null) {
                        double cpu = number(plain.get("cpu_us")) / number(row.get("cpu_us"));
                        cpuRatios.add(cpu);
                        pairCpu = fmt(cpu);
                    }
                }
            } else {
                plainByRound.put(row.get("round"), row);
            }
            this.out.append(String.format(
                    Locale.ROOT,
                    "| %s | %s | %,.0f | %s | %s | %s | %s | %s | %s | %s |\n",
                    row.get("round"),
                    row.get("mode"),
                    number(row.get("rps")),
                    row.getOrDefault("cpu_us", ""),
                    row.get("p50"),
                    row.get("p99"),
                    row.get("non2xx"),
                    row.get("ratelimit_header"),
                    pairRps,
                    pairCpu));
        }
        if (!rpsRatios.isEmpty()) {
            double median = median(rpsRatios);
            this.out.append(String.format(
                    Locale.ROOT,
                    "\nThrottled / unthrottled, median of %d pairs: **%s** by requests/s (range %s–%s)%s; 429s and other "
                            + "non-2xx in the throttled rounds: %d.\n\n",
                    rpsRatios.size(),
                    fmt(median),
                    fmt(Collections.min(rpsRatios)),
                    fmt(Collections.max(rpsRatios)),
                    cpuRatios.isEmpty() ? "" : ", **" + fmt(median(cpuRatios)) + "** by CPU per request",
                    non2xx));
            check(
                    "HTTP (target: throttled ≥ 0.95× unthrottled; no 429 while measuring)",
                    "GET /api/hello",
                    "throttled / unthrottled (median of pairs)",
                    median,
                    0.95,
                    true);
            check(
                    "HTTP (target: throttled ≥ 0.95× unthrottled; no 429 while measuring)",
                    "GET /api/hello",
                    "non-2xx responses",
                    non2xx,
                    0,
                    false);
        }
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        int n = sorted.size();
        return (n % 2 == 1) ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    // ---------------------------------------------------------------- targets

    private void check(String grid, String row, String column, double value, double bound, boolean atLeast) {
        boolean met = atLeast ? value >= bound : value <= bound;
        String cell = Double.isNaN(value) ? "–" : fmt(value) + (met ? " met" : " **missed**");
        if (!Double.isNaN(value)) {
            this.checked++;
            this.missed += met ? 0 : 1;
        }
        this.grids
                .computeIfAbsent(grid, (g) -> new LinkedHashMap<>())
                .computeIfAbsent(row, (r) -> new LinkedHashMap<>())
                .put(column, cell);
    }

    private void targets() {
        this.maxBytesPerOp.forEach((algorithm, bytes) -> {
            if (TARGETED.contains(algorithm)) {
                String grid =
                        "Memory store: per key (targets ≤ 32 B allocated per decision, ≤ 150 B retained per idle key)";
                // judged in whole bytes: JMH's normalized figure carries about 0.0001 B/op of its own bookkeeping
                check(
                        grid,
                        algorithm,
                        "most B allocated per decision on a kept key (hot), any run",
                        Math.rint(bytes),
                        32,
                        false);
                Double zipf = this.maxBytesPerOpZipf.get(algorithm);
                if (zipf != null) {
                    this.grids
                            .get(grid)
                            .get(algorithm)
                            .put(
                                    "most B per decision on Zipf keys (state of expired keys created again), not judged",
                                    fmt(zipf));
                }
            }
        });
        String redisGrid = "Redis store: throughput ratio (target ≥ 0.85× raw EVALSHA at 16 and 64 callers; "
                + "≥ 20× Bucket4j on a hot key at 64 callers) and round trips (target 1)";
        this.maxRoundTrips.forEach(
                (row, trips) -> check(redisGrid, row, "most round trips per decision", trips, 1.0, false));
        this.maxJdbcRoundTrips.forEach(
                (row, trips) -> check(JDBC_GRID, row, "most round trips per decision", trips, 1.0, false));
        StringBuilder tables = new StringBuilder();
        this.grids.forEach((title, rows) -> {
            List<String> columns = new ArrayList<>();
            rows.values()
                    .forEach((cells) -> cells.keySet().forEach((c) -> {
                        if (!columns.contains(c)) {
                            columns.add(c);
                        }
                    }));
            tables.append("### ").append(title).append("\n\n| |");
            columns.forEach((c) -> tables.append(' ').append(c).append(" |"));
            tables.append("\n|---|");
            columns.forEach((c) -> tables.append("--:|"));
            tables.append('\n');
            rows.forEach((row, cells) -> {
                tables.append("| ").append(row).append(" |");
                columns.forEach((c) ->
                        tables.append(' ').append(cells.getOrDefault(c, "")).append(" |"));
                tables.append('\n');
            });
            tables.append('\n');
        });
        this.out.append(String.format(Locale.ROOT, "## Targets: %d checked, %d missed\n\n", this.checked, this.missed));
        this.out.append(tables);
    }

    // ---------------------------------------------------------------- helpers

    private static String fmt(double value) {
        if (Double.isNaN(value)) {
            return "–";
        }
        return String.format(Locale.ROOT, (Math.abs(value) >= 100) ? "%.0f" : "%.2f", value);
    }

    private static String mops(double value) {
        return String.format(Locale.ROOT, "%.2f", value / 1e6);
    }

    private static String percent(double share) {
        return Double.isNaN(share) ? "–" : String.format(Locale.ROOT, "%.0f%%", share * 100);
    }

    private static double number(String text) {
        if (text == null || text.isBlank() || text.equals("NaN")) {
            return Double.NaN;
        }
        return Double.parseDouble(text.replace("\"", "").trim());
    }

    /** Splits one CSV line (JMH's: fields quoted, no embedded quotes). */
    private static List<String> csv(String line) {
        List<String> cells = new ArrayList<>();
        StringBuilder cell = new StringBuilder();
        boolean quoted = false;
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if (c == '"') {
                quoted = !quoted;
            } else if (c == ',' && !quoted) {
                cells.add(cell.toString());
                cell.setLength(0);
            } else {
                cell.append(c);
            }
        }
        cells.add(cell.toString());
        return cells;
    }
}
