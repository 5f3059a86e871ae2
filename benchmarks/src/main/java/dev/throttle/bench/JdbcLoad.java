package dev.throttle.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.throttle.Limiter;
import dev.throttle.resilience.RefusalMemory;
import dev.throttle.spring.jdbc.JdbcNearCacheSettings;
import dev.throttle.spring.jdbc.JdbcSchema;
import dev.throttle.spring.jdbc.JdbcThrottleStore;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.distributed.jdbc.PrimaryKeyMapper;
import io.github.bucket4j.distributed.proxy.ProxyManager;
import io.github.bucket4j.postgresql.Bucket4jPostgreSQL;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * One decision per call against one local PostgreSQL, from 1, 16 or 64 concurrent callers (threads,
 * each waiting for its answer as a servlet thread would), on one hot key or on 100,000 Zipf keys,
 * every variant on a HikariCP pool of Spring Boot's default size ({@value #POOL_SIZE}). Variants:
 * <ul>
 * <li>{@code throttle-<algorithm>}: this project's {@link JdbcThrottleStore} as the starter builds it
 * by default (its own threads holding at most 4 of the pool's connections, a 1 s timeout, the
 * database's clock), deciding the regime's policy; {@code throttle-<algorithm>@<n>} the same with
 * {@code max-connections} n (Bucket4j takes as many of the pool's connections as it has callers);
 * {@code throttle-<algorithm>+near-cache} the same with {@code throttle.store.jdbc.near-cache.enabled}
 * (refusals answered on the instance until their Retry-After; one more connection held, listening);</li>
 * <li>{@code bucket4j-select-for-update}: Bucket4j's {@code PostgreSQLSelectForUpdateBasedProxyManager}
 * (a transaction per decision: the row locked by {@code SELECT ... FOR UPDATE}, then written back),
 * configured to the same limit, a bucket proxy built per call as its guide does;</li>
 * <li>{@code bucket4j-advisory-lock}: Bucket4j's {@code PostgreSQLadvisoryLockBasedProxyManager} (a
 * transaction per decision under {@code pg_advisory_xact_lock} of the key's hash), likewise;</li>
 * <li>{@code select-1}: the raw baseline, one prepared {@code SELECT} of the key on a pooled connection
 * per call (no table): the floor of any store that decides in one statement.</li>
 * </ul>
 *
 * <p>Per case: the tables emptied, a warm-up, then a timed run (decisions/s, latency p50/p99 from an
 * HdrHistogram of every call, and the CPU time the client JVM and the PostgreSQL server processes
 * spent per decision: they share the machine's cores). Then a short run on a second pool whose
 * connections go through a loopback relay that reads the PostgreSQL wire protocol: round trips per
 * decision are the times the client sent after the server's {@code ReadyForQuery} (it waited for an
 * answer, then spoke again; messages it sends without waiting count once), statements per decision are
 * the client's {@code Execute} and {@code Query} messages ({@code BEGIN} and {@code COMMIT} included). The relay is off the timed path, as
 * {@code MONITOR} is in {@link RedisLoad}. Every loop is bounded by time and by count.
 *
 * <p>Usage: {@code JdbcLoad <jdbc-url> <out-file> <variant-warmup-s> <warmup-s> <measure-s> <variant>
 * <regime> <keys> <callers>}, lists comma-separated, the URL of the form
 * {@code jdbc:postgresql://127.0.0.1:<port>/<database>?user=...}; one variant per JVM, so that no
 * variant's code shapes another's JIT profile. Loopback only.
 */
public final class JdbcLoad {

    /** Spring Boot's default {@code spring.datasource.hikari.maximum-pool-size}. */
    static final int POOL_SIZE = 10;

    /**
     * Bucket4j's table: its PostgreSQL layout with a text key (our keys are text); {@code explicit_lock}
     * is the advisory-lock manager's (the key's lock id, which its purge of expired rows locks by).
     */
    static final String BUCKET4J_TABLE = "bucket4j_bucket";

    /** Decisions counted through the relay, in all, per case (after {@link #RELAY_WARMUP} uncounted). */
    private static final long COUNTED_DECISIONS = 2_000;

    private static final long RELAY_WARMUP = 200;

    private static final Pattern HOST_PORT = Pattern.compile("^jdbc:postgresql://([^:/?]+):(\\d+)(/.*)$");

    private JdbcLoad() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 9) {
            System.err.println(
                    "usage: JdbcLoad <jdbc-url> <out-file> <variant-warmup-s> <warmup-s> <measure-s> <variant> <regime>"
                            + " <keys,...> <callers,...>");
            System.exit(2);
        }
        String url = args[0];
        Matcher hostPort = HOST_PORT.matcher(url);
        if (!hostPort.matches()) {
            throw new IllegalArgumentException("expected jdbc:postgresql://<host>:<port>/<database>..., was " + url);
        }
        String out = args[1];
        Duration variantWarmup = seconds(args[2]);
        Duration warmup = seconds(args[3]);
        Duration measure = seconds(args[4]);
        String variant = args[5];
        String regime = args[6];
        List<String> keyKinds = List.of(args[7].split(","));
        List<Integer> callers = new ArrayList<>();
        for (String c : args[8].split(",")) {
            callers.add(Integer.parseInt(c));
        }
        Map<String, String[]> sequences = new LinkedHashMap<>();
        for (String kind : keyKinds) {
            sequences.put(kind, Workload.sequence(kind, 42));
        }
        try (PrintStream results = new PrintStream(new FileOutputStream(out, true), true, StandardCharsets.UTF_8);
                HikariDataSource pool = pool(url);
                Relay relay = Relay.start(hostPort.group(1), Integer.parseInt(hostPort.group(2)));
                HikariDataSource relayed = pool(relayed(hostPort.group(3), relay.port()))) {
            prepare(pool);
            awaitFull(pool);
            awaitFull(relayed);
            long postmaster = postmasterPid(pool);
            try (Subject subject = Subject.open(variant, regime, pool);
                    Subject counted = Subject.open(variant, regime, relayed)) {
                // JIT warm-up of this JVM, on every key distribution and the largest caller count
                for (String kind : keyKinds) {
                    RedisLoad.run(
                            subject.caller,
                            sequences.get(kind),
                            callers.get(callers.size() - 1),
                            variantWarmup.dividedBy(keyKinds.size()),
                            null);
                }
                for (String kind : keyKinds) {
                    for (int n : callers) {
                        clear(pool);
                        Map<String, Object> result =
                                runCase(subject, counted, relay, postmaster, sequences.get(kind), n, warmup, measure);
                        StringBuilder line = new StringBuilder();
                        line.append(String.format(
                                Locale.ROOT,
                                "variant=%s regime=%s keys=%s callers=%d pool=%d",
                                variant,
                                regime,
                                kind,
                                n,
                                POOL_SIZE));
                        result.forEach((name, value) ->
                                line.append(' ').append(name).append('=').append(value));
                        results.println(line);
                        System.out.println(line);
                    }
                }
            }
        }
        System.exit(0);
    }

    /** The URL through the relay, without TLS or GSS encryption, which the relay could not read. */
    private static String relayed(String databaseAndParameters, int port) {
        String separator = databaseAndParameters.contains("?") ? "&" : "?";
        return "jdbc:postgresql://127.0.0.1:" + port + databaseAndParameters + separator
                + "sslmode=disable&gssEncMode=disable";
    }

    private static Duration seconds(String text) {
        return Duration.ofMillis((long) (Double.parseDouble(text) * 1000));
    }

    static Map<String, Object> runCase(
            Subject subject,
            Subject counted,
            Relay relay,
            long postmaster,
            String[] sequence,
            int callers,
            Duration warmup,
            Duration measure)
            throws Exception {
        RedisLoad.run(subject.caller, sequence, callers, warmup, null);
        long serverCpuBefore = serverCpuTicks(postmaster);
        long clientCpuBefore = RedisLoad.clientCpuNanos();
        RedisLoad.Run timed = RedisLoad.run(subject.caller, sequence, callers, measure, null);
        long clientCpu = RedisLoad.clientCpuNanos() - clientCpuBefore;
        long serverTicks = serverCpuTicks(postmaster) - serverCpuBefore;
        // the same decisions through the relay: uncounted first (a connection idle since the last case
        // is validated once by the pool), then counted
        RedisLoad.run(counted.caller, sequence, callers, Duration.ofSeconds(3), new AtomicLong(RELAY_WARMUP));
        long roundTripsBefore = relay.roundTrips.get();
        long statementsBefore = relay.statements.get();
        RedisLoad.Run countedRun = RedisLoad.run(
                counted.caller, sequence, callers, Duration.ofSeconds(5), new AtomicLong(COUNTED_DECISIONS));
        long roundTrips = relay.roundTrips.get() - roundTripsBefore;
        long statements = relay.statements.get() - statementsBefore;
        long countedCalls = Math.max(1, countedRun.decisions() + countedRun.errors());

        Map<String, Object> result = new LinkedHashMap<>();
        long decisions = timed.decisions();
        long answered = Math.max(1, decisions + timed.errors());
        result.put("decisions", decisions);
        result.put("errors", timed.errors());
        result.put("seconds", String.format(Locale.ROOT, "%.3f", timed.seconds()));
        result.put("per_second", String.format(Locale.ROOT, "%.0f", decisions / timed.seconds()));
        result.put(
                "allowed_share", String.format(Locale.ROOT, "%.3f", timed.allowed() / (double) Math.max(1, decisions)));
        result.put("p50_us", String.format(Locale.ROOT, "%.0f", timed.latency().getValueAtPercentile(50) / 1000.0));
        result.put("p99_us", String.format(Locale.ROOT, "%.0f", timed.latency().getValueAtPercentile(99) / 1000.0));
        result.put("client_cpu_us", String.format(Locale.ROOT, "%.1f", clientCpu / 1000.0 / answered));
        result.put(
                "server_cpu_us",
                (postmaster > 0)
                        ? String.format(Locale.ROOT, "%.1f", serverTicks * 1e6 / CLOCK_TICKS / answered)
                        : "n/a");
        result.put("round_trips_per_decision", String.format(Locale.ROOT, "%.2f", roundTrips / (double) countedCalls));
        result.put("statements_per_decision", String.format(Locale.ROOT, "%.2f", statements / (double) countedCalls));
        result.put("counted_decisions", countedCalls);
        return result;
    }

    // ---------------------------------------------------------------- the database

    /** A pool as Spring Boot builds one from {@code spring.datasource.url}: HikariCP, its defaults but the size. */
    static HikariDataSource pool(String url) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setMaximumPoolSize(POOL_SIZE);
        config.setPoolName("bench-" + url.hashCode());
        return new HikariDataSource(config);
    }

    /** Waits (at most 10 s) until the pool holds all its connections, so that none is opened while measuring. */
    private static void awaitFull(HikariDataSource pool) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (pool.getHikariPoolMXBean().getTotalConnections() < POOL_SIZE && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
    }

    /** The store's schema (its own script, as {@code initialize-schema} runs it) and Bucket4j's table. */
    private static void prepare(DataSource dataSource) throws SQLException {
        JdbcSchema.create(dataSource, JdbcThrottleStore.DEFAULT_TABLE_PREFIX);
        execute(
                dataSource,
                "CREATE TABLE IF NOT EXISTS " + BUCKET4J_TABLE
                        + "(id VARCHAR PRIMARY KEY, state BYTEA, expires_at BIGINT, explicit_lock BIGINT)");
    }

    private static void clear(DataSource dataSource) throws SQLException {
        execute(dataSource, "TRUNCATE " + JdbcThrottleStore.DEFAULT_TABLE_PREFIX + "state, " + BUCKET4J_TABLE);
    }

    private static void execute(DataSource dataSource, String sql) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }

    /** Clock ticks per second of {@code /proc}'s CPU times (USER_HZ, 100 on Linux). */
    private static final double CLOCK_TICKS = 100.0;

    /**
     * The postmaster's process id, read from {@code postmaster.pid} in the data directory, when this
     * process can read it (the server is local and the harness runs as root or as its owner); 0 otherwise.
     */
    private static long postmasterPid(DataSource dataSource) {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement();
                ResultSet result = statement.executeQuery("SHOW data_directory")) {
            result.next();
            Path pidFile = Path.of(result.getString(1), "postmaster.pid");
            return Long.parseLong(Files.readAllLines(pidFile).get(0).trim());
        } catch (SQLException | IOException | RuntimeException ex) {
            return 0;
        }
    }

    /** CPU time (user + system, clock ticks) of the postmaster and every process it started. */
    private static long serverCpuTicks(long postmaster) {
        if (postmaster <= 0) {
            return 0;
        }
        long ticks = 0;
        try (var processes = Files.list(Path.of("/proc"))) {
            for (Path process : processes.toList()) {
                String name = process.getFileName().toString();
                if (!name.chars().allMatch(Character::isDigit)) {
                    continue;
                }
                try {
                    String stat = Files.readString(process.resolve("stat"));
                    // fields after the command's closing parenthesis: state, ppid, ..., utime (14th), stime (15th)
                    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    long pid = Long.parseLong(name);
                    long parent = Long.parseLong(fields[1]);
                    if (pid == postmaster || parent == postmaster) {
                        ticks += Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
                    }
                } catch (IOException | RuntimeException gone) {
                    // the process ended while being read
                }
            }
        } catch (IOException ex) {
            return 0;
        }
        return ticks;
    }

    // ---------------------------------------------------------------- the variants

    /** A variant, opened once on a pool and used for every case. */
    static final class Subject implements AutoCloseable {

        final RedisLoad.Caller caller;

        private final AutoCloseable resource;

        private Subject(RedisLoad.Caller caller, AutoCloseable resource) {
            // the first failure of a variant is printed (every one is counted as an error): a variant
            // that fails on every call must say why, not only show a row of errors
            AtomicBoolean told = new AtomicBoolean();
            this.caller = (key) -> {
                try {
                    return caller.call(key);
                } catch (Exception ex) {
                    if (!told.getAndSet(true)) {
                        System.err.println("first failure: " + ex);
                        for (Throwable cause = ex.getCause(); cause != null; cause = cause.getCause()) {
                            System.err.println("  caused by: " + cause);
                        }
                    }
                    throw ex;
                }
            };
            this.resource = resource;
        }

        static Subject open(String variant, String regime, DataSource dataSource) {
            if (variant.startsWith("throttle-")) {
                // throttle-<algorithm>[@<max-connections>]: the store's default bound on connections unless given
                String spec = variant.substring("throttle-".length());
                // throttle-<algorithm>+near-cache: with throttle.store.jdbc.near-cache.enabled (its defaults)
                boolean nearCache = spec.endsWith("+near-cache");
                spec = nearCache ? spec.substring(0, spec.length() - "+near-cache".length()) : spec;
                int at = spec.indexOf('@');
                String algorithm = (at < 0) ? spec : spec.substring(0, at);
                int connections =
                        (at < 0) ? JdbcThrottleStore.DEFAULT_MAX_CONNECTIONS : Integer.parseInt(spec.substring(at + 1));
                JdbcThrottleStore store = new JdbcThrottleStore(
                        dataSource,
                        JdbcThrottleStore.DEFAULT_TABLE_PREFIX,
                        JdbcThrottleStore.DEFAULT_TIMEOUT,
                        connections,
                        null,
                        null,
                        0,
                        nearCache
                                ? JdbcNearCacheSettings.of(
                                        RefusalMemory.DEFAULT_MAXIMUM_KEYS,
                                        JdbcNearCacheSettings.DEFAULT_MINIMUM_RETRY_AFTER,
                                        Set.of())
                                : JdbcNearCacheSettings.disabled());
                if (nearCache) {
                    store.eventsHeard().orTimeout(10, TimeUnit.SECONDS).join();
                }
                Limiter limiter = store.limiter(Workload.policy(algorithm, regime));
                return new Subject((key) -> limiter.tryAcquire(key, 1).allowed(), store);
            }
            if (variant.startsWith("bucket4j-")) {
                ProxyManager<String> buckets = bucket4j(variant, dataSource);
                BucketConfiguration configuration = Workload.bucket4jConfiguration(regime);
                return new Subject(
                        (key) -> buckets.builder()
                                .build(key, configuration)
                                .tryConsumeAndReturnRemaining(1)
                                .isConsumed(),
                        () -> {});
            }
            if (variant.equals("select-1")) {
                return new Subject(
                        (key) -> {
                            try (Connection connection = dataSource.getConnection();
                                    PreparedStatement statement =
                                            connection.prepareStatement("SELECT 1 WHERE ?::text IS NOT NULL")) {
                                statement.setString(1, key);
                                try (ResultSet result = statement.executeQuery()) {
                                    return result.next();
                                }
                            }
                        },
                        () -> {});
            }
            throw new IllegalArgumentException("unknown variant " + variant);
        }

        private static ProxyManager<String> bucket4j(String variant, DataSource dataSource) {
            // rows expire once the bucket is full again, as the Redis step configures Bucket4j
            ExpirationAfterWriteStrategy expiry =
                    ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax(Workload.IDLE);
            return switch (variant) {
                case "bucket4j-select-for-update" ->
                    Bucket4jPostgreSQL.selectForUpdateBasedBuilder(dataSource)
                            .primaryKeyMapper(PrimaryKeyMapper.STRING)
                            .table(BUCKET4J_TABLE)
                            .idColumn("id")
                            .stateColumn("state")
                            .expiresAtColumn("expires_at")
                            .expirationAfterWrite(expiry)
                            .build();
                case "bucket4j-advisory-lock" ->
                    Bucket4jPostgreSQL.advisoryLockBasedBuilder(dataSource)
                            .primaryKeyMapper(PrimaryKeyMapper.STRING)
                            .table(BUCKET4J_TABLE)
                            .idColumn("id")
                            .stateColumn("state")
                            .expiresAtColumn("expires_at")
                            .expirationAfterWrite(expiry)
                            .build();
                default -> throw new IllegalArgumentException("unknown variant " + variant);
            };
        }

        @Override
        public void close() throws Exception {
            this.resource.close();
        }
    }

    // ---------------------------------------------------------------- counting round trips

    /**
     * A loopback TCP relay in front of PostgreSQL that counts, as it forwards them unchanged, round trips
     * (a client message sent after the server's last {@code ReadyForQuery} starts one: the client waited
     * for that answer before it sent again) and statements (the client's {@code Execute} and
     * {@code Query} messages). It reads the protocol's framing only: a
     * type byte and a length per message, after the client's untyped startup message; so its clients
     * must not negotiate TLS or GSS encryption (the relayed pool's URL says {@code sslmode=disable} and
     * {@code gssEncMode=disable}).
     */
    static final class Relay implements AutoCloseable {

        final AtomicLong roundTrips = new AtomicLong();

        final AtomicLong statements = new AtomicLong();

        private final ServerSocket server;

        private final List<Socket> sockets = new CopyOnWriteArrayList<>();

        private Relay(ServerSocket server) {
            this.server = server;
        }

        int port() {
            return this.server.getLocalPort();
        }

        static Relay start(String host, int port) throws IOException {
            Relay relay = new Relay(new ServerSocket(0, 64, InetAddress.getLoopbackAddress()));
            Thread acceptor = new Thread(
                    () -> {
                        while (!relay.server.isClosed()) {
                            try {
                                Socket client = relay.server.accept();
                                Socket upstream = new Socket(host, port);
                                client.setTcpNoDelay(true);
                                upstream.setTcpNoDelay(true);
                                relay.sockets.add(client);
                                relay.sockets.add(upstream);
                                AtomicBoolean answered = new AtomicBoolean(true);
                                relay.pump(
                                        client.getInputStream(),
                                        upstream.getOutputStream(),
                                        new Framing(false, answered),
                                        upstream);
                                relay.pump(
                                        upstream.getInputStream(),
                                        client.getOutputStream(),
                                        new Framing(true, answered),
                                        client);
                            } catch (IOException ex) {
                                // closed, or the server refused: the pool sees the failure itself
                            }
                        }
                    },
                    "relay-accept");
            acceptor.setDaemon(true);
            acceptor.start();
            return relay;
        }

        private void pump(InputStream in, OutputStream out, Framing framing, Socket peer) {
            Thread thread = new Thread(
                    () -> {
                        byte[] buffer = new byte[64 * 1024];
                        try {
                            for (int n; (n = in.read(buffer)) >= 0; ) {
                                framing.feed(buffer, n, this);
                                out.write(buffer, 0, n);
                            }
                        } catch (IOException ex) {
                            // one side closed
                        } finally {
                            try {
                                peer.close();
                            } catch (IOException ignored) {
                                // closing anyway
                            }
                        }
                    },
                    "relay-pump");
            thread.setDaemon(true);
            thread.start();
        }

        @Override
        public void close() throws IOException {
            this.server.close();
            for (Socket socket : this.sockets) {
                socket.close();
            }
        }
    }

    /** The framing of one direction of the protocol: a type byte (but in the startup message) and a length. */
    static final class Framing {

        private final boolean fromServer;

        private boolean typed;

        private final byte[] header = new byte[5];

        private int filled;

        private long left;

        /** Of the connection: whether the server has answered (a ReadyForQuery) since the client last sent. */
        private final AtomicBoolean answered;

        Framing(boolean fromServer, AtomicBoolean answered) {
            this.fromServer = fromServer;
            this.answered = answered;
            // the server's first message is typed; the client's first (startup or cancel) is not
            this.typed = fromServer;
        }

        void feed(byte[] bytes, int n, Relay relay) {
            int i = 0;
            while (i < n) {
                if (this.left > 0) {
                    int skip = (int) Math.min(this.left, n - i);
                    i += skip;
                    this.left -= skip;
                    continue;
                }
                int headerLength = this.typed ? 5 : 4;
                this.header[this.filled++] = bytes[i++];
                if (this.filled == headerLength) {
                    int at = this.typed ? 1 : 0;
                    long length = ((this.header[at] & 0xffL) << 24)
                            | ((this.header[at + 1] & 0xffL) << 16)
                            | ((this.header[at + 2] & 0xffL) << 8)
                            | (this.header[at + 3] & 0xffL);
                    if (this.typed) {
                        byte type = this.header[0];
                        if (this.fromServer) {
                            if (type == 'Z') {
                                this.answered.set(true);
                            }
                        } else {
                            // the first message sent after an answer starts a round trip; messages the
                            // client sends before waiting (pgjdbc sends BEGIN as a simple query followed by
                            // the statement's Parse, Bind, Execute, Sync) belong to the same one
                            if (this.answered.getAndSet(false)) {
                                relay.roundTrips.incrementAndGet();
                            }
                            if (type == 'E' || type == 'Q') {
                                relay.statements.incrementAndGet();
                            }
                        }
                    }
                    this.left = length - 4;
                    this.filled = 0;
                    this.typed = true;
                }
            }
        }
    }
}
