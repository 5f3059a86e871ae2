package dev.throttle.testing.redis;

import dev.throttle.testing.Eventually;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.sync.RedisCommands;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Redis servers, clients and anything else a test starts, stopped after each test in the reverse
 * order: {@code @RegisterExtension final RedisServers servers = new RedisServers();}. For the tests
 * of Redis's own topologies (a master and its replica, Sentinels), which start servers of their own.
 */
public final class RedisServers implements AfterEachCallback {

    private final List<AutoCloseable> started = new ArrayList<>();

    /**
     * Starts a server on a free port.
     * @param args further {@code redis-server} arguments
     * @return the running server, stopped after the test
     */
    public RedisProcess start(List<String> args) {
        RedisProcess redis = new RedisProcess(RedisProcess.freePort(false), args);
        redis.start();
        closeAfter(redis::stop);
        return redis;
    }

    /**
     * Starts a master and a replica of it, and waits until the replica is in sync.
     * @return both, stopped after the test
     */
    public MasterAndReplica masterWithReplica() {
        RedisProcess master = start(List.of());
        RedisProcess replica = start(List.of("--replicaof", "127.0.0.1 " + master.port()));
        Eventually.until(
                "the replica is in sync", () -> replica.info("replication").contains("master_link_status:up"));
        return new MasterAndReplica(master, replica);
    }

    /**
     * A connection to {@code redis}, without reconnects; its client is shut down after the test,
     * within bounds (a client whose connection a Sentinel closed can take long to shut down).
     * @param redis the server
     * @return its commands
     */
    public RedisCommands<String, String> commands(RedisProcess redis) {
        RedisClient client = redis.endpoint().newClient();
        closeAfter(() -> client.shutdownAsync(0, 1, TimeUnit.SECONDS).get(5, TimeUnit.SECONDS));
        return client.connect().sync();
    }

    /**
     * Closes {@code resource} after the test, before what was started earlier.
     * @param resource what to close
     */
    public void closeAfter(AutoCloseable resource) {
        this.started.add(resource);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        for (int i = this.started.size() - 1; i >= 0; i--) {
            try {
                this.started.get(i).close();
            } catch (Exception ex) {
                // a server already gone, a client already shut down
            }
        }
        this.started.clear();
    }

    /** A master and its replica. */
    public record MasterAndReplica(RedisProcess master, RedisProcess replica) {}
}
