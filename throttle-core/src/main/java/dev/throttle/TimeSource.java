package dev.throttle;

/**
 * The clock every decision reads: wall-clock milliseconds since the Unix epoch.
 *
 * <p>Algorithms never read {@link System#currentTimeMillis()} themselves; a store is given a
 * {@code TimeSource} so that tests can drive time with a {@link ManualTimeSource} instead of
 * sleeping. It is wall-clock based (not {@link System#nanoTime()}) because the Redis store's
 * decisions use the Redis server's wall clock, and both stores must agree.
 *
 * <p>Implementations must be thread-safe.
 */
@FunctionalInterface
public interface TimeSource {

    /**
     * Returns the current time.
     * @return milliseconds since 1970-01-01T00:00:00Z
     */
    long currentTimeMillis();

    /**
     * Returns the system clock.
     * @return a time source backed by {@link System#currentTimeMillis()}
     */
    static TimeSource system() {
        return SystemTimeSource.INSTANCE;
    }
}

enum SystemTimeSource implements TimeSource {
    INSTANCE;

    @Override
    public long currentTimeMillis() {
        return System.currentTimeMillis();
    }
}
