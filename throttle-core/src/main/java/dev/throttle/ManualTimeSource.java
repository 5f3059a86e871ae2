package dev.throttle;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link TimeSource} that stands still until it is moved: for tests that must not sleep.
 *
 * <p>Declare one as a bean (or hand it to a store) and call {@link #advance(Duration)} to move
 * time forward. Thread-safe.
 */
public final class ManualTimeSource implements TimeSource {

    private final AtomicLong millis;

    /**
     * Creates a clock that reads {@code start}.
     * @param start the initial time
     */
    public ManualTimeSource(Instant start) {
        this.millis = new AtomicLong(start.toEpochMilli());
    }

    /**
     * Creates a clock that reads 2026-01-01T00:00:00Z.
     */
    public ManualTimeSource() {
        this(Instant.parse("2026-01-01T00:00:00Z"));
    }

    @Override
    public long currentTimeMillis() {
        return this.millis.get();
    }

    /**
     * Moves the clock forward (or back, with a negative duration).
     * @param duration how far to move
     * @return this clock
     */
    public ManualTimeSource advance(Duration duration) {
        this.millis.addAndGet(duration.toMillis());
        return this;
    }

    /**
     * Moves the clock forward by some milliseconds.
     * @param millis how far to move
     * @return this clock
     */
    public ManualTimeSource advanceMillis(long millis) {
        this.millis.addAndGet(millis);
        return this;
    }

    /**
     * Sets the clock.
     * @param instant the new time
     */
    public void set(Instant instant) {
        this.millis.set(instant.toEpochMilli());
    }

    /**
     * Returns the current reading as an instant.
     * @return the current time
     */
    public Instant instant() {
        return Instant.ofEpochMilli(this.millis.get());
    }
}
