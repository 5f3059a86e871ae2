package dev.throttle.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Algorithm;
import dev.throttle.BoundPolicy;
import dev.throttle.Decision;
import dev.throttle.ManualTimeSource;
import dev.throttle.Policy;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The trace on each algorithm's page in {@code docs/algorithms} is replayed here against the memory
 * store (which the contract suite ties to the Redis store), so a page cannot show a decision the
 * code does not make. A trace is a Markdown table after a line
 * {@code <!-- trace: algorithm=gcra limit=3 period=3s -->}; each row is one call:
 * {@code | at (ms) | call | answer | remaining | retry after (ms) | next unit (ms) |}, where call is
 * {@code acquire}, {@code acquire 2} (a cost), {@code refund} (the previous allowed call's) or
 * {@code reset}, and answer is {@code allowed} or {@code refused} ({@code -} for refund and reset).
 */
class AlgorithmPageTracesTests {

    private static final Pattern TRACE = Pattern.compile("<!-- trace: (.+?) -->");

    @Test
    void everyAlgorithmHasAPageWithATrace() throws IOException {
        for (Algorithm<?> algorithm : Algorithm.all()) {
            Path page = algorithmsDirectory().resolve(algorithm.id() + ".md");
            assertThat(page).as("docs page of %s", algorithm.id()).exists();
            assertThat(Files.readString(page)).as(page.toString()).contains("<!-- trace: algorithm=" + algorithm.id());
        }
    }

    @TestFactory
    Stream<DynamicTest> eachPagesTraceIsWhatTheMemoryStoreDecides() throws IOException {
        List<DynamicTest> tests = new ArrayList<>();
        try (Stream<Path> pages = Files.list(algorithmsDirectory())) {
            for (Path page :
                    pages.filter((p) -> p.toString().endsWith(".md")).sorted().toList()) {
                List<String> lines = Files.readAllLines(page);
                for (int i = 0; i < lines.size(); i++) {
                    Matcher trace = TRACE.matcher(lines.get(i));
                    if (trace.find()) {
                        int start = i;
                        tests.add(DynamicTest.dynamicTest(
                                page.getFileName() + ":" + (start + 1),
                                () -> replay(settings(trace.group(1)), lines, start + 1)));
                    }
                }
            }
        }
        assertThat(tests).isNotEmpty();
        return tests.stream();
    }

    private static void replay(Map<String, Object> settings, List<String> lines, int from) {
        String id = (String) settings.remove("algorithm");
        Policy policy = Algorithm.fromId(id).create("doc", settings);
        ManualTimeSource clock = new ManualTimeSource(Instant.parse("2026-01-01T00:00:00Z"));
        long start = clock.currentTimeMillis();
        try (MemoryThrottleStore store = new MemoryThrottleStore(clock, 1000)) {
            BoundPolicy bound = new Throttler(store, List.of(policy)).bound("doc");
            Decision lastAllowed = null;
            int lastCost = 0;
            int rows = 0;
            for (int i = from; i < lines.size(); i++) {
                String line = lines.get(i).trim();
                if (!line.startsWith("|")) {
                    if (rows > 0 || !line.isEmpty()) {
                        break;
                    }
                    continue;
                }
                String[] cells = line.substring(1, line.length() - 1).split("\\|");
                String at = cells[0].trim();
                if (!at.matches("\\d+")) {
                    continue; // the header and the separator
                }
                rows++;
                clock.set(Instant.ofEpochMilli(start + Long.parseLong(at)));
                String call = cells[1].trim().replace("`", "");
                String where = "row at " + at + " ms (" + call + ")";
                if (call.equals("refund")) {
                    assertThat(lastAllowed)
                            .as(where + ": a refund follows an allowed call")
                            .isNotNull();
                    bound.refund("k", lastCost, lastAllowed);
                    continue;
                }
                if (call.equals("reset")) {
                    bound.reset("k");
                    continue;
                }
                int cost = call.startsWith("acquire ")
                        ? Integer.parseInt(call.substring(8).trim())
                        : 1;
                Decision decision = bound.tryAcquire("k", cost);
                assertThat(decision.allowed() ? "allowed" : "refused").as(where).isEqualTo(cells[2].trim());
                assertThat(decision.remaining()).as(where + " remaining").isEqualTo(Integer.parseInt(cells[3].trim()));
                if (decision.allowed()) {
                    lastAllowed = decision;
                    lastCost = cost;
                    assertThat(cells[4].trim()).as(where + " retry after").isEqualTo("-");
                    assertThat(decision.nextUnitAfterMillis())
                            .as(where + " next unit")
                            .isEqualTo(Long.parseLong(cells[5].trim()));
                } else {
                    assertThat(decision.retryAfterMillis())
                            .as(where + " retry after")
                            .isEqualTo(Long.parseLong(cells[4].trim()));
                }
            }
            assertThat(rows).as("rows of the trace").isPositive();
        }
    }

    /** {@code algorithm=gcra limit=3 period=3s timeouts=1s,2s} as the typed values a policy takes. */
    private static Map<String, Object> settings(String text) {
        Map<String, Object> settings = new LinkedHashMap<>();
        for (String pair : text.trim().split("\\s+")) {
            String[] nameValue = pair.split("=", 2);
            settings.put(nameValue[0], value(nameValue[1]));
        }
        return settings;
    }

    private static Object value(String text) {
        if (text.matches("\\d+")) {
            return Integer.valueOf(text);
        }
        if (text.matches("\\d+\\.\\d+")) {
            return Double.valueOf(text);
        }
        if (text.equals("true") || text.equals("false")) {
            return Boolean.valueOf(text);
        }
        if (text.contains(",")) {
            return Stream.of(text.split(","))
                    .map(AlgorithmPageTracesTests::duration)
                    .toList();
        }
        return text.matches("\\d+(ms|s|m|h)") ? duration(text) : text;
    }

    private static Duration duration(String text) {
        Matcher m = Pattern.compile("(\\d+)(ms|s|m|h)").matcher(text.trim());
        assertThat(m.matches())
                .as("a duration like 500ms, 3s, 1m or 1h: " + text)
                .isTrue();
        long n = Long.parseLong(m.group(1));
        return switch (m.group(2)) {
            case "ms" -> Duration.ofMillis(n);
            case "s" -> Duration.ofSeconds(n);
            case "m" -> Duration.ofMinutes(n);
            default -> Duration.ofHours(n);
        };
    }

    /** {@code docs/algorithms} of the repository, found from wherever the tests run. */
    static Path algorithmsDirectory() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isDirectory(dir.resolve("docs/algorithms"))) {
            dir = dir.getParent();
        }
        assertThat(dir)
                .as("a docs/algorithms directory above " + Path.of("").toAbsolutePath())
                .isNotNull();
        return dir.resolve("docs/algorithms");
    }
}
