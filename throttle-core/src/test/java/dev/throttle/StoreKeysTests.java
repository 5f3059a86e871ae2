package dev.throttle;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class StoreKeysTests {

    @Test
    void aKeyLongerThanTheLimitReachesTheStoreAsADigestWithinTheLimit() {
        String prefix = "x".repeat(300);
        assertThat(StoreKeys.of(prefix + "a"))
                .hasSizeLessThanOrEqualTo(Throttler.MAX_KEY_LENGTH)
                .isNotEqualTo(StoreKeys.of(prefix + "b"));
    }

    @Test
    void keysWithLoneSurrogatesStayApartFromEachOtherAndFromTheirUtf8Spelling() {
        // written to a store's UTF-8 bytes, each of the first three would be "sur?@x.com"
        List<String> keys = List.of(
                "sur\ud800@x.com",
                "sur\udbff@x.com",
                "sur\udc00@x.com",
                "sur?@x.com",
                "sur\ufffd@x.com",
                "sur\ud800\ud800@x.com",
                "x".repeat(300) + "\ud800",
                "x".repeat(300) + "?");
        assertThat(keys.stream().map(StoreKeys::of).distinct()).hasSize(keys.size());
        assertThat(StoreKeys.of("sur\ud800@x.com"))
                .startsWith("#")
                .hasSizeLessThanOrEqualTo(Throttler.MAX_KEY_LENGTH)
                .isEqualTo(StoreKeys.of("sur\ud800@x.com"));
    }

    @Test
    void noKeySentCanBeAnotherKeysDigest() {
        String longKey = "v".repeat(Throttler.MAX_KEY_LENGTH + 1);
        String digest = StoreKeys.of(longKey);
        assertThat(digest).startsWith("#");
        assertThat(StoreKeys.of(digest)).as("the digest sent as a key").isNotEqualTo(digest);
        assertThat(StoreKeys.of("#")).isNotEqualTo("#").startsWith("#").isEqualTo(StoreKeys.of("#"));
        assertThat(StoreKeys.of("#tag")).isNotEqualTo(StoreKeys.of("##tag")).isNotEqualTo("#tag");
        assertThat(StoreKeys.of("a#b")).isEqualTo("a#b");
    }

    @Test
    void wellFormedKeysWithSurrogatePairsReachTheStoreAsTheyAre() {
        assertThat(StoreKeys.of("emoji\ud83d\ude00@x.com")).isEqualTo("emoji\ud83d\ude00@x.com");
        assertThat(StoreKeys.of("sur?@x.com")).isEqualTo("sur?@x.com");
    }
}
