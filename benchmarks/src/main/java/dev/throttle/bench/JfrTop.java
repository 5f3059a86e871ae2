package dev.throttle.bench;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordingFile;

/**
 * Summarizes a JFR recording's CPU samples ({@code jdk.ExecutionSample}): the methods with the most
 * samples on top of the stack (self) and anywhere on it (total), as shares of all samples, for the
 * profile evidence in the README.
 *
 * <p>Usage: {@code JfrTop <recording.jfr> [rows] [thread-name-prefix]}, or
 * {@code JfrTop <recording.jfr> grep:<method-name-part>} for a few whole stacks through a method.
 */
public final class JfrTop {

    private JfrTop() {}

    public static void main(String[] args) throws Exception {
        Path file = Path.of(args[0]);
        if (args.length > 1 && args[1].startsWith("grep:")) {
            stacks(file, args[1].substring("grep:".length()));
            return;
        }
        int rows = (args.length > 1) ? Integer.parseInt(args[1]) : 25;
        String threadPrefix = (args.length > 2) ? args[2] : null;
        Map<String, Integer> self = new HashMap<>();
        Map<String, Integer> total = new HashMap<>();
        int samples = 0;
        for (RecordedEvent event : RecordingFile.readAllEvents(file)) {
            if (!event.getEventType().getName().equals("jdk.ExecutionSample")) {
                continue;
            }
            if (threadPrefix != null) {
                var thread = event.getThread("sampledThread");
                if (thread == null
                        || thread.getJavaName() == null
                        || !thread.getJavaName().startsWith(threadPrefix)) {
                    continue;
                }
            }
            RecordedStackTrace stack = event.getStackTrace();
            if (stack == null || stack.getFrames().isEmpty()) {
                continue;
            }
            samples++;
            List<RecordedFrame> frames = stack.getFrames();
            self.merge(name(frames.get(0)), 1, Integer::sum);
            Set<String> seen = new HashSet<>();
            for (RecordedFrame frame : frames) {
                String name = name(frame);
                if (seen.add(name)) {
                    total.merge(name, 1, Integer::sum);
                }
            }
        }
        System.out.printf("%d samples%n%nself%n", samples);
        print(self, samples, rows);
        System.out.printf("%ntotal (on the stack)%n");
        print(total, samples, rows);
    }

    /** Prints up to five whole stacks that contain {@code needle} (for "who calls this?"). */
    private static void stacks(Path file, String needle) throws java.io.IOException {
        int printed = 0;
        for (RecordedEvent event : RecordingFile.readAllEvents(file)) {
            if (printed >= 5
                    || !event.getEventType().getName().equals("jdk.ExecutionSample")
                    || event.getStackTrace() == null) {
                continue;
            }
            List<RecordedFrame> frames = event.getStackTrace().getFrames();
            if (frames.stream().anyMatch((f) -> name(f).contains(needle))) {
                printed++;
                System.out.println("---");
                frames.forEach((f) -> System.out.println("  " + name(f) + ":" + f.getLineNumber()));
            }
        }
    }

    private static String name(RecordedFrame frame) {
        return frame.getMethod().getType().getName() + "." + frame.getMethod().getName();
    }

    private static void print(Map<String, Integer> counts, int samples, int rows) {
        counts.entrySet().stream()
                .sorted((a, b) -> b.getValue() - a.getValue())
                .limit(rows)
                .forEach((e) -> System.out.printf("%6.1f%%  %s%n", 100.0 * e.getValue() / samples, e.getKey()));
    }
}
