package dev.throttle.bench;

import dev.throttle.Decision;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.openjdk.jol.info.ClassLayout;

/**
 * Prints the object layouts (JOL) that the memory figures depend on: the {@link Decision} every
 * call allocates, and the per-key cells of the memory store.
 */
public final class Layouts {

    private Layouts() {}

    public static void main(String[] args) throws ClassNotFoundException {
        System.out.println(ClassLayout.parseClass(Decision.class).toPrintable());
        System.out.println(ClassLayout.parseClass(AtomicLong.class).toPrintable());
        // the memory store's per-key cell of the one-long algorithms (package-private)
        System.out.println(ClassLayout.parseClass(Class.forName("dev.throttle.memory.PackedLimiter$Cell"))
                .toPrintable());
        System.out.println(ClassLayout.parseClass(AtomicReference.class).toPrintable());
    }
}
