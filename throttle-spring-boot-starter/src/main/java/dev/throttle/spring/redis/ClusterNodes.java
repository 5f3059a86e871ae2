package dev.throttle.spring.redis;

import dev.throttle.Limiter;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Which Redis Cluster master holds a key's state: the store's partitions ({@link Limiter#partition}),
 * so that the failure policy takes a dead master out on its own while the other masters' keys keep
 * deciding on Redis.
 *
 * <p>A key's slot is Redis Cluster's own (CRC16 of the hash tag {@code <policy>:<key>}), computed
 * from the key's characters without building its bytes; its master is read from Lettuce's own view of
 * the topology (its {@code Partitions}, an array by slot that Lettuce replaces when the topology
 * changes), and the master's partition from a cache by slot that is rebuilt for a slot when Lettuce
 * names another master for it. So a decision costs the CRC of its key and three array reads, and no
 * allocation once every slot's master has been seen.
 *
 * <p>When a call fails (a master that does not answer, {@code CLUSTERDOWN}), Lettuce is asked to
 * read the topology again, at most every {@link #REFRESH_INTERVAL_MILLIS} ms, so that a replica
 * promoted in a dead master's place is found even when the application configured no topology
 * refresh of its own: its slots then belong to a master of their own, and their keys are decided on
 * Redis again from the first call after the refresh.
 *
 * <p>Until the store's connection has been obtained (and Lettuce has read the topology), every key
 * is in one partition, the whole store. Thread-safe; lock-free.
 */
final class ClusterNodes {

    /** Redis Cluster's hash slots. */
    static final int SLOTS = 16384;

    /** The least time between two topology reads that failures ask for. */
    static final long REFRESH_INTERVAL_MILLIS = 500;

    private static final System.Logger logger = System.getLogger(ClusterNodes.class.getName());

    /** The partition of the keys whose slot no master serves (yet): they fail together. */
    private static final Object NO_MASTER = new Object() {
        @Override
        public String toString() {
            return "slots without a master";
        }
    };

    /** CRC16-CCITT (XMODEM), as Redis Cluster hashes keys. */
    private static final int[] CRC16 = new int[256];

    static {
        for (int b = 0; b < 256; b++) {
            int crc = b << 8;
            for (int bit = 0; bit < 8; bit++) {
                crc = ((crc & 0x8000) != 0) ? (crc << 1) ^ 0x1021 : crc << 1;
            }
            CRC16[b] = crc & 0xffff;
        }
    }

    private final LettuceConnectionFactory factory;

    /** Lettuce's cluster client, once it has read the topology; null before. */
    private volatile @Nullable RedisClusterClient client;

    /** By slot, the last master seen serving it and its partition; benign races (entries are immutable). */
    private final Entry[] bySlot = new Entry[SLOTS];

    /** One partition per master, by node id, so that a slot's entry rebuilt names the same partition. */
    private final Map<String, Node> byId = new ConcurrentHashMap<>();

    /** When the last topology read was asked for, in {@link System#nanoTime()}. */
    private final AtomicLong lastRefresh = new AtomicLong(System.nanoTime() - TimeUnit.SECONDS.toNanos(1));

    private ClusterNodes(LettuceConnectionFactory factory) {
        this.factory = factory;
    }

    /**
     * The masters of the cluster that {@code connectionFactory} connects to, or null when it is not a
     * Redis Cluster (standalone, Sentinel: the store is one partition, the master of the moment).
     */
    static @Nullable ClusterNodes of(ReactiveRedisConnectionFactory connectionFactory) {
        return (connectionFactory instanceof LettuceConnectionFactory lettuce && lettuce.isClusterAware())
                ? new ClusterNodes(lettuce)
                : null;
    }

    /**
     * Starts telling keys apart by master, once the store's connection is obtained: called on the
     * store's connecting thread, where reading the topology may block.
     */
    void connected() {
        try {
            AbstractRedisClient client = this.factory.getNativeClient();
            if (client instanceof RedisClusterClient cluster) {
                // reads the topology now, if the connection has not: never on a caller's thread
                cluster.getPartitions();
                this.client = cluster;
            }
        } catch (RuntimeException ex) {
            logger.log(Level.DEBUG, "Could not read the Redis Cluster topology; keys are not told apart by master", ex);
        }
    }

    /**
     * The partition of a key: its master, or the whole store before the topology is known.
     * @param tag where the policy's hash tag starts
     * @param key the key
     */
    Object partition(TagStart tag, String key) {
        RedisClusterClient client = this.client;
        if (client == null) {
            return Limiter.ONE_PARTITION;
        }
        int slot = tag.slot(key);
        RedisClusterNode master = client.getPartitions().getMasterBySlot(slot);
        if (master == null) {
            return NO_MASTER;
        }
        Entry known = this.bySlot[slot];
        if (known != null && known.master == master) {
            return known.node;
        }
        Node node = this.byId.computeIfAbsent(master.getNodeId(), (id) -> new Node(id, master.getUri()));
        this.bySlot[slot] = new Entry(master, node);
        return node;
    }

    /**
     * Asks Lettuce to read the topology again, unless it was asked less than
     * {@link #REFRESH_INTERVAL_MILLIS} ago: a call failed, maybe because its master died and a
     * replica took its place. On a thread of its own, as a failure may be seen on an event loop.
     */
    void callFailed() {
        RedisClusterClient client = this.client;
        if (client == null) {
            return;
        }
        long now = System.nanoTime();
        long last = this.lastRefresh.get();
        if (now - last < TimeUnit.MILLISECONDS.toNanos(REFRESH_INTERVAL_MILLIS)
                || !this.lastRefresh.compareAndSet(last, now)) {
            return;
        }
        Thread refresh = new Thread(
                () -> {
                    try {
                        client.refreshPartitionsAsync().toCompletableFuture().join();
                    } catch (RuntimeException ex) {
                        // the next failure asks again
                    }
                },
                "throttle-redis-topology");
        refresh.setDaemon(true);
        refresh.start();
    }

    /**
     * Where a policy's hash tag starts: the CRC of {@code <policy>:}, carried on over each key.
     * @param keyStart the policy's {@code <prefix>:{<policy>:}}, for a tag that a policy name starting
     * with a '}' leaves empty (Redis then hashes the whole key)
     * @param crc the CRC of the tag's part before the key
     * @param closed whether the policy's name ends the tag (it holds a '}'): every key has one slot
     */
    record TagStart(String keyStart, int crc, boolean closed, boolean empty) {

        static TagStart of(String keyStart, String policy) {
            String start = policy + ":";
            int crc = 0;
            for (int i = 0; i < start.length(); i++) {
                char c = start.charAt(i);
                if (c == '}') {
                    return new TagStart(keyStart, crc, true, i == 0);
                }
                crc = utf8(crc, start, i);
                if (Character.isHighSurrogate(c)
                        && i + 1 < start.length()
                        && Character.isLowSurrogate(start.charAt(i + 1))) {
                    i++;
                }
            }
            return new TagStart(keyStart, crc, false, false);
        }

        /** The key's slot, as Redis Cluster computes it from {@code <keyStart><key>}}. */
        int slot(String key) {
            if (this.empty) {
                return SlotHash.getSlot((this.keyStart + key + "}").getBytes(StandardCharsets.UTF_8));
            }
            int crc = this.crc;
            if (!this.closed) {
                for (int i = 0; i < key.length(); i++) {
                    char c = key.charAt(i);
                    if (c == '}') {
                        break;
                    }
                    crc = utf8(crc, key, i);
                    if (Character.isHighSurrogate(c)
                            && i + 1 < key.length()
                            && Character.isLowSurrogate(key.charAt(i + 1))) {
                        i++;
                    }
                }
            }
            return crc & (SLOTS - 1);
        }
    }

    /** Carries the CRC over the UTF-8 bytes of the character at {@code i} (a pair of surrogates, one code point). */
    private static int utf8(int crc, String text, int i) {
        char c = text.charAt(i);
        if (c < 0x80) {
            return crc16(crc, c);
        }
        if (c < 0x800) {
            return crc16(crc16(crc, 0xc0 | (c >> 6)), 0x80 | (c & 0x3f));
        }
        if (Character.isSurrogate(c)) {
            if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                int cp = Character.toCodePoint(c, text.charAt(i + 1));
                crc = crc16(crc, 0xf0 | (cp >> 18));
                crc = crc16(crc, 0x80 | ((cp >> 12) & 0x3f));
                crc = crc16(crc, 0x80 | ((cp >> 6) & 0x3f));
                return crc16(crc, 0x80 | (cp & 0x3f));
            }
            // a lone surrogate: Java's UTF-8 encoder writes '?' in its place
            return crc16(crc, '?');
        }
        crc = crc16(crc, 0xe0 | (c >> 12));
        crc = crc16(crc, 0x80 | ((c >> 6) & 0x3f));
        return crc16(crc, 0x80 | (c & 0x3f));
    }

    private static int crc16(int crc, int b) {
        return ((crc << 8) ^ CRC16[((crc >>> 8) ^ b) & 0xff]) & 0xffff;
    }

    /** A slot's master as Lettuce last named it, and its partition. */
    private record Entry(RedisClusterNode master, Node node) {}

    /** One master: a partition of the store, named in logs by its address and the start of its id. */
    static final class Node {

        private final String id;

        private final String name;

        Node(String id, @Nullable RedisURI uri) {
            this.id = id;
            this.name = "node " + ((uri != null) ? uri.getHost() + ":" + uri.getPort() : "?") + " ("
                    + id.substring(0, Math.min(8, id.length())) + ")";
        }

        String id() {
            return this.id;
        }

        @Override
        public String toString() {
            return this.name;
        }
    }
}
