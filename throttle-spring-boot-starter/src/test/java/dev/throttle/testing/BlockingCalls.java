package dev.throttle.testing;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingOperationError;

/**
 * BlockHound, installed once for every BlockHound test class of the JVM they share (a second
 * {@code install} would be ignored, and its callback with it): any blocking call on a non-blocking
 * thread becomes a {@link BlockingOperationError}, and is also recorded here with its stack, so that a
 * test fails by naming the blocking call rather than by an error far from it.
 */
public final class BlockingCalls {

    private static final List<String> recorded = new CopyOnWriteArrayList<>();

    private static boolean installed;

    private BlockingCalls() {}

    /** Installs BlockHound with the recording callback, once per JVM. */
    public static synchronized void install() {
        if (installed) {
            return;
        }
        installed = true;
        // install(...) also applies the integrations found on the class path (Reactor's, Netty's), which
        // mark their event-loop and parallel threads non-blocking; a bare builder would check no thread
        BlockHound.install((builder) -> builder
                // a console appender writes synchronously by the application's own choice, not the starter's
                .allowBlockingCallsInside("ch.qos.logback.core.OutputStreamAppender", "writeBytes")
                // Netty's own buffer allocator briefly locks a magazine while it grows (seen when Lettuce
                // registers a reconnected channel on its event loop): Netty's code, not the starter's
                .allowBlockingCallsInside(
                        "io.netty.buffer.AdaptivePoolingAllocator$MagazineGroup", "tryExpandMagazines")
                .blockingMethodCallback((method) -> {
                    recorded.add(method + " on " + Thread.currentThread().getName() + "\n"
                            + stack(new Throwable().getStackTrace()));
                    throw new BlockingOperationError(method);
                }));
    }

    /**
     * Returns the blocking calls recorded since the last {@link List#clear()}, live.
     * @return the calls, each with its stack
     */
    public static List<String> recorded() {
        return recorded;
    }

    private static String stack(StackTraceElement[] frames) {
        return Arrays.stream(frames).limit(60).map((frame) -> "\tat " + frame).collect(Collectors.joining("\n"));
    }
}
