package dev.throttle.testing.redis;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.RedisClusterClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * A real three-master Redis Cluster on loopback, made of {@link RedisProcess} nodes with
 * {@code cluster-enabled yes}, joined from Java with {@code CLUSTER MEET} and {@code CLUSTER ADDSLOTS}
 * (slots 0-5460, 5461-10922, 10923-16383), ready once every node's {@code CLUSTER INFO} says
 * {@code cluster_state:ok}. No replicas, unless started by {@link #startWithReplicas}: then each
 * master has one, joined with {@code CLUSTER REPLICATE}, which Redis promotes when its master dies.
 *
 * <p>{@link #shared()} gives one per JVM, stopped by a shutdown hook. Thread-safe.
 */
public final class RedisClusterProcesses implements AutoCloseable {

    /** The slot ranges of the three masters, inclusive. */
    public static final int[][] SLOT_RANGES = {{0, 5460}, {5461, 10922}, {10923, 16383}};

    private static final Duration FORM_TIMEOUT = Duration.ofSeconds(30);

    private final List<RedisProcess> nodes;

    /** Each master's replica, in the masters' order; empty without replicas. */
    private final List<RedisProcess> replicas;

    private RedisClusterProcesses(List<RedisProcess> nodes) {
        this(nodes, List.of());
    }

    private RedisClusterProcesses(List<RedisProcess> nodes, List<RedisProcess> replicas) {
        this.nodes = List.copyOf(nodes);
        this.replicas = List.copyOf(replicas);
    }

    /**
     * Returns the cluster that this JVM's tests share, forming it on first use.
     * @return the running cluster
     */
    public static RedisClusterProcesses shared() {
        return Holder.CLUSTER;
    }

    /**
     * Starts three nodes on free ports and joins them into a cluster.
     * @return the running cluster; close it when done
     */
    public static RedisClusterProcesses start() {
        List<RedisProcess> nodes = new ArrayList<>();
        try {
            for (int i = 0; i < SLOT_RANGES.length; i++) {
                int port = RedisProcess.freePort(true);
                RedisProcess node = new RedisProcess(
                        port,
                        List.of(
                                "--cluster-enabled",
                                "yes",
                                "--cluster-config-file",
                                "nodes-" + port + ".conf",
                                "--cluster-node-timeout",
                                "5000"));
                node.start();
                nodes.add(node);
            }
            RedisClusterProcesses cluster = new RedisClusterProcesses(nodes);
            cluster.form();
            return cluster;
        } catch (RuntimeException ex) {
            nodes.forEach(RedisProcess::stop);
            throw ex;
        }
    }

    /**
     * Starts three masters and a replica of each on free ports, joins them into a cluster and waits
     * until every replica is in sync with its master.
     * @param nodeTimeout {@code cluster-node-timeout}: how long a master may be silent before the
     * others mark it failed and its replica is promoted
     * @param requireFullCoverage {@code cluster-require-full-coverage}: whether every node answers
     * {@code CLUSTERDOWN} while some slot has no master
     * @return the running cluster; close it when done
     */
    public static RedisClusterProcesses startWithReplicas(Duration nodeTimeout, boolean requireFullCoverage) {
        List<RedisProcess> masters = new ArrayList<>();
        List<RedisProcess> replicas = new ArrayList<>();
        try {
            for (int i = 0; i < 2 * SLOT_RANGES.length; i++) {
                int port = RedisProcess.freePort(true);
                RedisProcess node = new RedisProcess(
                        port,
                        List.of(
                                "--cluster-enabled",
                                "yes",
                                "--cluster-config-file",
                                "nodes-" + port + ".conf",
                                "--cluster-node-timeout",
                                Long.toString(nodeTimeout.toMillis()),
                                "--cluster-require-full-coverage",
                                requireFullCoverage ? "yes" : "no"));
                node.start();
                (i < SLOT_RANGES.length ? masters : replicas).add(node);
            }
            RedisClusterProcesses cluster = new RedisClusterProcesses(masters, replicas);
            cluster.form();
            cluster.replicate();
            return cluster;
        } catch (RuntimeException ex) {
            masters.forEach(RedisProcess::stop);
            replicas.forEach(RedisProcess::stop);
            throw ex;
        }
    }

    /** Makes each replica node replicate its master, and waits until each is in sync. */
    private void replicate() {
        RedisClient client = RedisClient.create();
        try {
            RedisCommands<String, String> first = client.connect(
                            RedisURI.create("127.0.0.1", this.nodes.get(0).port()))
                    .sync();
            for (RedisProcess replica : this.replicas) {
                first.clusterMeet("127.0.0.1", replica.port());
            }
            long deadline = System.nanoTime() + FORM_TIMEOUT.toNanos();
            for (int i = 0; i < this.replicas.size(); i++) {
                String masterId = client.connect(
                                RedisURI.create("127.0.0.1", this.nodes.get(i).port()))
                        .sync()
                        .clusterMyId();
                RedisCommands<String, String> replica = client.connect(RedisURI.create(
                                "127.0.0.1", this.replicas.get(i).port()))
                        .sync();
                // the replica must have heard of its master through the cluster bus first
                for (; ; ) {
                    try {
                        replica.clusterReplicate(masterId);
                        break;
                    } catch (RuntimeException ex) {
                        if (System.nanoTime() > deadline) {
                            throw ex;
                        }
                        Thread.sleep(50);
                    }
                }
            }
            for (RedisProcess node : this.replicas) {
                RedisCommands<String, String> replica = client.connect(RedisURI.create("127.0.0.1", node.port()))
                        .sync();
                while (!replica.info("replication").contains("master_link_status:up")
                        || !isOk(replica, this.nodes.size() + this.replicas.size())) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException(
                                "replica " + node.port() + " did not sync: " + replica.info("replication"));
                    }
                    Thread.sleep(50);
                }
            }
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(ex);
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
    }

    private void form() {
        RedisClient client = RedisClient.create();
        try {
            List<StatefulRedisConnection<String, String>> connections = new ArrayList<>();
            for (RedisProcess node : this.nodes) {
                connections.add(client.connect(RedisURI.create("127.0.0.1", node.port())));
            }
            RedisCommands<String, String> first = connections.get(0).sync();
            for (int i = 1; i < this.nodes.size(); i++) {
                first.clusterMeet("127.0.0.1", this.nodes.get(i).port());
            }
            for (int i = 0; i < this.nodes.size(); i++) {
                int[] range = SLOT_RANGES[i];
                int[] slots = new int[range[1] - range[0] + 1];
                for (int slot = range[0]; slot <= range[1]; slot++) {
                    slots[slot - range[0]] = slot;
                }
                connections.get(i).sync().clusterAddSlots(slots);
            }
            long deadline = System.nanoTime() + FORM_TIMEOUT.toNanos();
            while (!connections.stream().allMatch((c) -> isOk(c.sync()))) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("cluster did not reach cluster_state:ok: "
                            + connections.stream()
                                    .map((c) -> c.sync().clusterInfo())
                                    .collect(Collectors.joining("\n---\n")));
                }
                Thread.sleep(50);
            }
            connections.forEach(StatefulRedisConnection::close);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(ex);
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
    }

    private static boolean isOk(RedisCommands<String, String> commands) {
        return isOk(commands, SLOT_RANGES.length);
    }

    private static boolean isOk(RedisCommands<String, String> commands, int knownNodes) {
        String info = commands.clusterInfo();
        if (!info.contains("cluster_state:ok") || !info.contains("cluster_known_nodes:" + knownNodes)) {
            return false;
        }
        // every node must also see all slots assigned
        return info.contains("cluster_slots_ok:16384");
    }

    /**
     * Returns the nodes.
     * @return the three nodes, in slot-range order
     */
    public List<RedisProcess> nodes() {
        return this.nodes;
    }

    /**
     * Returns each master's replica, in the masters' order.
     * @return the replicas; empty for a cluster started without
     */
    public List<RedisProcess> replicas() {
        return this.replicas;
    }

    /**
     * Returns the nodes as {@code host:port}, as in {@code spring.data.redis.cluster.nodes}.
     * @return for example {@code 127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002}
     */
    public String nodesProperty() {
        return this.nodes.stream().map((n) -> "127.0.0.1:" + n.port()).collect(Collectors.joining(","));
    }

    /**
     * Returns a Lettuce cluster client seeded with every node; shut it down when done.
     * @return the client
     */
    public RedisClusterClient newClient() {
        return RedisClusterClient.create(this.nodes.stream()
                .map((n) -> RedisURI.create("127.0.0.1", n.port()))
                .toList());
    }

    /**
     * Builds and starts a Spring connection factory for the cluster, as Spring Boot would from
     * {@code spring.data.redis.cluster.nodes}. Destroy it when done.
     * @return a started factory
     */
    public LettuceConnectionFactory newConnectionFactory() {
        RedisClusterConfiguration configuration =
                new RedisClusterConfiguration(List.of(nodesProperty().split(",")));
        LettuceClientConfiguration clientConfiguration = LettuceClientConfiguration.builder()
                .clientResources(RedisEndpoint.Resources.SHARED)
                .commandTimeout(Duration.ofSeconds(5))
                .build();
        LettuceConnectionFactory factory = new LettuceConnectionFactory(configuration, clientConfiguration);
        factory.afterPropertiesSet();
        factory.start();
        return factory;
    }

    /**
     * Runs {@code FLUSHALL} on every node.
     */
    public void flushAll() {
        this.nodes.forEach((node) -> node.endpoint().flushAll());
    }

    @Override
    public void close() {
        this.nodes.forEach(RedisProcess::stop);
        this.replicas.forEach(RedisProcess::stop);
    }

    private static final class Holder {

        static final RedisClusterProcesses CLUSTER = startShared();

        private static RedisClusterProcesses startShared() {
            RedisClusterProcesses cluster = start();
            Runtime.getRuntime().addShutdownHook(new Thread(cluster::close, "shared-redis-cluster-stop"));
            return cluster;
        }
    }
}
