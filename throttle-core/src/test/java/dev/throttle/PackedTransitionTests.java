package dev.throttle;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class PackedTransitionTests {

    private final ManualTimeSource clock = new ManualTimeSource();

    @Test
    void aPackedTimeIsReadExactlyWithinSeventeenYearsOfNowHoweverOldTheStoreIs() {
        long now = this.clock.currentTimeMillis();
        long seventeenYears = (1L << 39) - 1;
        for (long time : new long[] {
            now,
            now - 1,
            now + 1,
            now - seventeenYears,
            now + seventeenYears - 1,
            now + Duration.ofDays(3650).toMillis(),
            0,
            1L << 45
        }) {
            for (long reader :
                    new long[] {time, time - Duration.ofDays(3650).toMillis(), time + 50, time + (1L << 38)}) {
                long state = PackedTransition.pack(PackedTransition.MAX_COUNT, time);
                assertThat(PackedTransition.time(state, reader))
                        .as("written at %d, read at %d", time, reader)
                        .isEqualTo(time);
                assertThat(PackedTransition.count(state)).isEqualTo(PackedTransition.MAX_COUNT);
                assertThat(state).isNotNegative();
            }
        }
    }
}
