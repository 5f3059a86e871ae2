package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.cluster.SlotHash;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A key's slot, as the store computes it from the key's characters to find its master, is the slot
 * Redis Cluster (and Lettuce, which routes the call) computes from the bytes of its Redis key, hash
 * tag rules and UTF-8 included.
 */
class ClusterNodesTests {

    private static final List<String> KEYS = List.of(
            "alice@example.com",
            "",
            "10.0.0.1",
            "ünïcödé",
            "日本語のキー",
            "emoji-\uD83D\uDE00-key",
            "lone-\uD800-surrogate",
            "lone-low-\uDC00",
            "ends-with-high-\uD83D",
            "brace}in-the-key",
            "}starts-with-a-brace",
            "{braces}{again}",
            "\u0000probe:1f2e3d");

    private static final List<String> POLICIES = List.of("api", "login-ip", "pölicy", "bra}ce", "}first", "{x");

    @Test
    void theSlotOfAKeyIsTheOneRedisClusterHashesItsRedisKeyTo() {
        for (String policy : POLICIES) {
            String keyStart = PolicyScript.keyStart("throttle", policy);
            ClusterNodes.TagStart tag = ClusterNodes.TagStart.of(keyStart, policy);
            for (String key : KEYS) {
                byte[] redisKey = PolicyScript.redisKey(keyStart, key).getBytes(StandardCharsets.UTF_8);
                assertThat(tag.slot(key))
                        .as("policy '%s', key '%s'", policy, key)
                        .isEqualTo(SlotHash.getSlot(redisKey));
            }
            for (int i = 0; i < 2_000; i++) {
                String key = "user-" + i;
                assertThat(tag.slot(key))
                        .isEqualTo(SlotHash.getSlot(
                                PolicyScript.redisKey(keyStart, key).getBytes(StandardCharsets.UTF_8)));
            }
        }
    }
}
