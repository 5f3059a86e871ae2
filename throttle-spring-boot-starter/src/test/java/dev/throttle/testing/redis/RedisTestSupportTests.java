package dev.throttle.testing.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.testing.redis.SharedRedis.WithRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.sync.RedisAdvancedClusterCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Proves the Redis test support: the shared Redis answers {@code EVAL}, a dedicated one stops and
 * starts again on its port, and three nodes form a working cluster.
 */
@WithRedis
class RedisTestSupportTests {

    @Test
    void sharedRedisAnswersEval(RedisEndpoint redis) {
        RedisClient client = redis.newClient();
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            Long result = connection
                    .sync()
                    .eval("return tonumber(ARGV[1]) + 1", ScriptOutputType.INTEGER, new String[0], "41");
            assertThat(result).isEqualTo(42L);
            assertThat(connection.sync().info("server")).contains("redis_version:");
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
    }

    @Test
    void sharedRedisIsFlushedBeforeEachTest(RedisEndpoint redis) {
        RedisClient client = redis.newClient();
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            assertThat(connection.sync().dbsize()).isZero();
            connection.sync().set("left-over", "x");
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
    }

    @Test
    void dedicatedRedisRestartsOnItsPort() {
        try (RedisProcess redis = RedisProcess.startStandalone()) {
            int port = redis.port();
            assertThat(RedisProcess.ping(port)).isTrue();
            redis.stop();
            assertThat(redis.isRunning()).isFalse();
            assertThat(RedisProcess.ping(port)).isFalse();
            redis.start();
            assertThat(redis.port()).isEqualTo(port);
            assertThat(RedisProcess.ping(port)).isTrue();
        }
    }

    @Test
    void monitorSeesTopLevelAndScriptCommandsApart() {
        try (RedisProcess redis = RedisProcess.startStandalone();
                RedisMonitor monitor = new RedisMonitor(redis.endpoint())) {
            RedisClient client = redis.endpoint().newClient();
            try (StatefulRedisConnection<String, String> connection = client.connect()) {
                connection
                        .sync()
                        .eval(
                                "redis.call('SET', KEYS[1], '1'); return redis.call('GET', KEYS[1])",
                                ScriptOutputType.VALUE,
                                "k");
                connection.sync().echo("done-1");
            } finally {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
            }
            monitor.awaitMarker("done-1");
            List<String> topLevel = new ArrayList<>();
            List<String> inLua = new ArrayList<>();
            for (RedisMonitor.Command command : monitor.commands()) {
                (command.isTopLevel() ? topLevel : inLua).add(command.name());
            }
            assertThat(topLevel).contains("EVAL", "ECHO").doesNotContain("SET", "GET");
            assertThat(inLua).containsExactly("SET", "GET");
        }
    }

    @Test
    void threeNodesFormAClusterThatServesEverySlotRange() {
        RedisClusterProcesses cluster = RedisClusterProcesses.shared();
        for (RedisProcess node : cluster.nodes()) {
            RedisClient client = node.endpoint().newClient();
            try (StatefulRedisConnection<String, String> connection = client.connect()) {
                assertThat(connection.sync().clusterInfo()).contains("cluster_state:ok", "cluster_known_nodes:3");
            } finally {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
            }
        }
        RedisClusterClient client = cluster.newClient();
        try (StatefulRedisClusterConnection<String, String> connection = client.connect()) {
            RedisAdvancedClusterCommands<String, String> commands = connection.sync();
            boolean[] rangeSeen = new boolean[3];
            for (int i = 0; i < 200; i++) {
                String key = "key-" + i;
                commands.set(key, "v" + i);
                assertThat(commands.get(key)).isEqualTo("v" + i);
                int slot = SlotHash.getSlot(key);
                for (int r = 0; r < 3; r++) {
                    int[] range = RedisClusterProcesses.SLOT_RANGES[r];
                    rangeSeen[r] |= slot >= range[0] && slot <= range[1];
                }
            }
            assertThat(rangeSeen).containsOnly(true);
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
    }
}
