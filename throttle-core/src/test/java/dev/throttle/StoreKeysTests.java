package dev.throttle;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class StoreKeysTests {

    @Test
    void aKeyLongerThanTheLimitReachesTheStoreAsADigestWithinTheLimit() {
        String prefix = "x".repeat(300);
        assertThat(StoreKeys.of(prefix + "a"))
                .hasSizeLessThanOrEqualTo(Throttler.MAX_KEY_LENGTH)
                .isNotEqualTo(StoreKeys.of(prefix + "b"));
    }
}
