package dev.throttle.spring.admission;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * How many concurrency slots the calls of this JVM hold now, per policy: taken by an
 * {@link Admission} of a concurrency policy, and given up when the call ends. What the gauge
 * {@code throttle.concurrency.in-use} reads. Counts this instance's calls only (on Redis, other
 * instances hold slots of the same keys), and never names a key. Thread-safe.
 */
public final class SlotsInUse {

    private static final Map<String, AtomicInteger> COUNTS = new ConcurrentHashMap<>();

    private SlotsInUse() {}

    /**
     * Returns how many slots of a policy the calls of this JVM hold now.
     * @param policy the policy's name
     * @return the slots held, 0 for a policy never used
     */
    public static int of(String policy) {
        AtomicInteger count = COUNTS.get(policy);
        return (count != null) ? count.get() : 0;
    }

    static void taken(String policy) {
        COUNTS.computeIfAbsent(policy, (name) -> new AtomicInteger()).incrementAndGet();
    }

    static void released(String policy) {
        AtomicInteger count = COUNTS.get(policy);
        if (count != null) {
            count.decrementAndGet();
        }
    }
}
