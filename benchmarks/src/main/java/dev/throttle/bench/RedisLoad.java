package dev.throttle.bench;

import dev.throttle.ConcurrencyPolicy;
import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.spring.redis.NearCacheSettings;
import dev.throttle.spring.redis.RedisThrottleStore;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.redis.lettuce.Bucket4jLettuce;
import io.github.bucket4j.redis.lettuce.cas.LettuceBasedProxyManager;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Histogram;
import org.springframework.data.redis.connection.ReactiveRedisConnection;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * One decision per call against a local {@code redis-server}, from 1, 16 or 64 concurrent callers
 * (threads, each waiting for its answer as a servlet thread would), on one hot key or on 100,000
 * Zipf keys. Variants:
 * <ul>
 * <li>{@code throttle-<algorithm>}: this project's {@link RedisThrottleStore} on a Spring Data
 * Redis {@link LettuceConnectionFactory} (the shared native connection, as Spring Boot sets it up),
 * default timeout (100 ms), acquires that wait at the same moment sent in batches (the store's default);</li>
 * <li>{@code unbatched-<algorithm>}: the same store with batching off, one {@code EVALSHA} per
 * decision;</li>
 * <li>{@code replicated-<algorithm>}: the same store with the policy's {@code durability: replicated},
 * each decision's script followed by {@code WAIT 1} on the store's connection for such writes (the
 * Redis on {@code port} needs a replica);</li>
 * <li>{@code throttle-reserve-<algorithm>}: the same store's reservation ({@link Limiter#reserve}, a
 * call that may wait up to 1 s for its turn); {@code throttle-reserve-later-<algorithm>} up to ten years,
 * so that a key over its limit is granted a later turn;</li>
 * <li>{@code throttle-take-release}: a concurrency slot taken and given back by its receipt
 * ({@link #TAKE_RELEASE_POLICY}), two calls of the same store per operation;</li>
 * <li>{@code evalsha}: the raw baseline, {@code EVALSHA} of {@code return 1} (with the key as
 * KEYS[1]) through Lettuce's async API on the shared native connection of the same kind of factory
 * (the connection the store's reactive calls use), waited for with a bounded {@code get};</li>
 * <li>{@code evalsha-gcra-bare}: the floor of any store whose state lives in a script that reads
 * Redis {@code TIME}: the smallest GCRA script (TIME, GET, SET PX, an integer reply) on the raw
 * baseline's path, configured to the regime's GCRA limit;</li>
 * <li>{@code evalsha-spring}: the same through Spring Data Redis's reactive connection, the path the
 * store takes, to show how much of the store's cost is Spring's;</li>
 * <li>{@code bucket4j}: Bucket4j's Lettuce compare-and-swap proxy manager on its own Lettuce
 * connection, configured to the same limit, a bucket proxy built per call as its guide does.</li>
 * </ul>
 *
 * <p>Per case: a warm-up; then {@code CONFIG RESETSTAT}, a timed run (decisions/s, latency
 * p50/p99 from an HdrHistogram of every call) and {@code INFO commandstats} (commands run inside
 * Redis per decision), with the CPU time the client JVM and the Redis server spent per decision
 * (they share the machine's cores); then a short run under {@code MONITOR} that counts the client's top-level
 * commands between two markers (round trips per decision; the script's own commands show as
 * {@code [0 lua]} and are not round trips). Every loop is bounded by time and by count.
 *
 * <p>Usage: {@code RedisLoad <port> <out-file> <variant-warmup-s> <warmup-s> <measure-s> <variant> <regime>
 * <keys> <callers>}, lists comma-separated; one variant per JVM, so that no variant's code shapes
 * another's JIT profile. Loopback only.
 */
public final class RedisLoad {

    private static final String HOST = "127.0.0.1";

    /** At most this many decisions per caller in one timed run: a bound beside the time bound. */
    private static final long MAX_CALLS_PER_CALLER = 2_000_000;

    /** Decisions made under MONITOR, in all, per case. */
    private static final long MONITORED_DECISIONS = 2_000;

    private RedisLoad() {}

    /** One way to make a decision. */
    interface Caller {

        /** @return true when allowed */
        boolean call(String key) throws Exception;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 9) {
            System.err.println(
                    "usage: RedisLoad <port> <out-file> <variant-warmup-s> <warmup-s> <measure-s> <variant> <regime>"
                            + " <keys,...> <callers,...>");
            System.exit(2);
        }
        int port = Integer.parseInt(args[0]);
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
        try (PrintStream results =
                        new PrintStream(new java.io.FileOutputStream(out, true), true, StandardCharsets.UTF_8);
                Subject subject = Subject.open(variant, regime, port)) {
            // JIT warm-up of this JVM, on every key distribution and the largest caller count
            for (String kind : keyKinds) {
                run(
                        subject,
                        sequences.get(kind),
                        callers.get(callers.size() - 1),
                        variantWarmup.dividedBy(keyKinds.size()),
                        null);
            }
            for (String kind : keyKinds) {
                for (int n : callers) {
                    admin(port, "FLUSHALL");
                    Map<String, Object> result = runCase(port, subject, sequences.get(kind), n, warmup, measure);
                    StringBuilder line = new StringBuilder();
                    line.append(String.format(
                            Locale.ROOT, "variant=%s regime=%s keys=%s callers=%d", variant, regime, kind, n));
                    result.forEach((name, value) ->
                            line.append(' ').append(name).append('=').append(value));
                    results.println(line);
                    System.out.println(line);
                }
            }
        }
        System.exit(0);
    }

    private static Duration seconds(String text) {
        return Duration.ofMillis((long) (Double.parseDouble(text) * 1000));
    }

    static Map<String, Object> runCase(
            int port, Subject subject, String[] sequence, int callers, Duration warmup, Duration measure)
            throws Exception {
        run(subject, sequence, callers, warmup, null);
        admin(port, "CONFIG", "RESETSTAT");
        double serverCpuBefore = serverCpuSeconds(port);
        long clientCpuBefore = clientCpuNanos();
        Run timed = run(subject, sequence, callers, measure, null);
        long clientCpu = clientCpuNanos() - clientCpuBefore;
        double serverCpu = serverCpuSeconds(port) - serverCpuBefore;
        Map<String, Long> stats = commandStats(port);
        long insideRedis = 0;
        for (Map.Entry<String, Long> stat : stats.entrySet()) {
            if (!stat.getKey().equals("config") && !stat.getKey().equals("info")) {
                insideRedis += stat.getValue();
            }
        }
        long monitoredDecisions;
        long topLevel;
        try (Monitor monitor = Monitor.start(port)) {
            AtomicLong budget = new AtomicLong(MONITORED_DECISIONS);
            Run monitored = run(subject, sequence, callers, Duration.ofSeconds(3), budget);
            monitoredDecisions = monitored.decisions;
            topLevel = monitor.stop();
        }
        Map<String, Object> result = new LinkedHashMap<>();
        long decisions = timed.decisions;
        result.put("decisions", decisions);
        result.put("errors", timed.errors);
        result.put("seconds", String.format(Locale.ROOT, "%.3f", timed.seconds));
        result.put("per_second", String.format(Locale.ROOT, "%.0f", decisions / timed.seconds));
        result.put(
                "allowed_share", String.format(Locale.ROOT, "%.3f", timed.allowed / (double) Math.max(1, decisions)));
        result.put("p50_us", String.format(Locale.ROOT, "%.0f", timed.latency.getValueAtPercentile(50) / 1000.0));
        result.put("p99_us", String.format(Locale.ROOT, "%.0f", timed.latency.getValueAtPercentile(99) / 1000.0));
        long answered = Math.max(1, decisions + timed.errors);
        result.put("client_cpu_us", String.format(Locale.ROOT, "%.1f", clientCpu / 1000.0 / answered));
        result.put("server_cpu_us", String.format(Locale.ROOT, "%.1f", serverCpu * 1e6 / answered));
        result.put(
                "commands_per_decision",
                String.format(Locale.ROOT, "%.2f", insideRedis / (double) Math.max(1, decisions + timed.errors)));
        result.put(
                "round_trips_per_decision",
                String.format(Locale.ROOT, "%.2f", topLevel / (double) Math.max(1, monitoredDecisions)));
        result.put("commandstats", stats.toString().replace(" ", ""));
        return result;
    }

    record Run(long decisions, long allowed, long errors, double seconds, Histogram latency) {}

    /**
     * Runs {@code callers} threads for at most {@code duration}, each making at most
     * {@link #MAX_CALLS_PER_CALLER} decisions, or until {@code budget} (when given) is spent.
     */
    static Run run(Subject subject, String[] sequence, int callers, Duration duration, AtomicLong budget)
            throws InterruptedException {
        return run(subject.caller, sequence, callers, duration, budget);
    }

    /** The same for any way to decide (the PostgreSQL harness, {@link JdbcLoad}, shares this loop). */
    static Run run(Caller caller, String[] sequence, int callers, Duration duration, AtomicLong budget)
            throws InterruptedException {
        CountDownLatch ready = new CountDownLatch(callers);
        CountDownLatch go = new CountDownLatch(1);
        AtomicBoolean stop = new AtomicBoolean();
        Histogram total = new Histogram(TimeUnit.SECONDS.toNanos(60), 2);
        long[] decisions = new long[callers];
        long[] allowed = new long[callers];
        long[] errors = new long[callers];
        Histogram[] histograms = new Histogram[callers];
        Thread[] threads = new Thread[callers];
        for (int t = 0; t < callers; t++) {
            int id = t;
            histograms[t] = new Histogram(TimeUnit.SECONDS.toNanos(60), 2);
            threads[t] = new Thread(
                    () -> {
                        int cursor = ThreadLocalRandom.current().nextInt(Workload.SEQUENCE_LENGTH);
                        Histogram histogram = histograms[id];
                        ready.countDown();
                        try {
                            go.await();
                        } catch (InterruptedException ex) {
                            return;
                        }
                        for (long i = 0; i < MAX_CALLS_PER_CALLER && !stop.get(); i++) {
                            if (budget != null && budget.getAndDecrement() <= 0) {
                                break;
                            }
                            String key = sequence[cursor];
                            cursor = (cursor + 1) & (Workload.SEQUENCE_LENGTH - 1);
                            long start = System.nanoTime();
                            try {
                                if (caller.call(key)) {
                                    allowed[id]++;
                                }
                                decisions[id]++;
                                histogram.recordValue(
                                        Math.min(System.nanoTime() - start, TimeUnit.SECONDS.toNanos(60)));
                            } catch (Exception ex) {
                                errors[id]++;
                            }
                        }
                    },
                    "caller-" + t);
            threads[t].setDaemon(true);
            threads[t].start();
        }
        ready.await();
        long start = System.nanoTime();
        go.countDown();
        long deadline = start + duration.toNanos();
        for (Thread thread : threads) {
            long left = deadline - System.nanoTime();
            if (left > 0) {
                thread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            }
        }
        stop.set(true);
        for (Thread thread : threads) {
            thread.join(TimeUnit.SECONDS.toMillis(30));
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        long d = 0;
        long a = 0;
        long e = 0;
        for (int t = 0; t < callers; t++) {
            d += decisions[t];
            a += allowed[t];
            e += errors[t];
            total.add(histograms[t]);
        }
        return new Run(d, a, e, seconds, total);
    }

    /**
     * The concurrency policy of {@code throttle-take-release}: 100 slots per key (more than the most
     * callers, so that a take is never refused), a lease of 30 s.
     */
    static final ConcurrencyPolicy TAKE_RELEASE_POLICY =
            new ConcurrencyPolicy(Workload.POLICY, 100, Duration.ofSeconds(30));

    /** A variant, opened once and used for every case. */
    static final class Subject implements AutoCloseable {

        final Caller caller;

        private final AutoCloseable[] resources;

        private Subject(Caller caller, AutoCloseable... resources) {
            this.caller = caller;
            this.resources = resources;
        }

        static Subject open(String variant, String regime, int port) throws Exception {
            if (variant.startsWith("throttle-")
                    || variant.startsWith("nearcache-")
                    || variant.startsWith("unbatched-")
                    || variant.startsWith("replicated-")) {
                LettuceConnectionFactory factory = factory(port);
                boolean nearCache = variant.startsWith("nearcache-");
                // nearcache-: the store as the starter configures it by default (near cache of 100,000 keys
                // per policy, refusals of 50 ms or more); throttle-: the store without a near cache
                RedisThrottleStore store = nearCache
                        ? new RedisThrottleStore(
                                factory,
                                RedisThrottleStore.DEFAULT_KEY_PREFIX,
                                RedisThrottleStore.DEFAULT_TIMEOUT,
                                null,
                                NearCacheSettings.of(
                                        NearCacheSettings.DEFAULT_MAXIMUM_KEYS,
                                        NearCacheSettings.DEFAULT_MINIMUM_RETRY_AFTER))
                        : variant.startsWith("replicated-")
                                ? new RedisThrottleStore(
                                        factory,
                                        RedisThrottleStore.DEFAULT_KEY_PREFIX,
                                        RedisThrottleStore.DEFAULT_TIMEOUT,
                                        null,
                                        NearCacheSettings.disabled(),
                                        true,
                                        java.util.Set.of(
                                                Workload.policy(variant.substring("replicated-".length()), regime)
                                                        .name()))
                                : variant.startsWith("unbatched-")
                                        ? new RedisThrottleStore(
                                                factory,
                                                RedisThrottleStore.DEFAULT_KEY_PREFIX,
                                                RedisThrottleStore.DEFAULT_TIMEOUT,
                                                null,
                                                NearCacheSettings.disabled(),
                                                false)
                                        : new RedisThrottleStore(factory);
                String what = variant.substring(variant.indexOf('-') + 1);
                boolean takeRelease = what.equals("take-release");
                long maxWait = what.startsWith("reserve-later-")
                        ? ReserveBenchmark.LATER_WAIT
                        : what.startsWith("reserve-") ? ReserveBenchmark.NOW_WAIT : 0;
                String algorithm = what.substring(
                        what.startsWith("reserve-later-")
                                ? "reserve-later-".length()
                                : what.startsWith("reserve-") ? "reserve-".length() : 0);
                Limiter limiter = store.limiter(takeRelease ? TAKE_RELEASE_POLICY : Workload.policy(algorithm, regime));
                // wait for the store's background connect and script load
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (true) {
                    try {
                        limiter.tryAcquire("warm-up", 1);
                        break;
                    } catch (RuntimeException ex) {
                        if (System.nanoTime() > deadline) {
                            throw ex;
                        }
                        Thread.sleep(50);
                    }
                }
                Caller caller;
                if (takeRelease) {
                    // a slot taken and given back by its receipt, as a Slot closes: two calls of the store,
                    // the release not waited for where the store decides calls in the order made (Redis)
                    caller = (key) -> {
                        Decision decision = limiter.tryAcquire(key, 1);
                        if (decision.allowed()) {
                            if (limiter.decidesInOrderMade()) {
                                limiter.refundAsync(key, 1, decision);
                            } else {
                                limiter.refund(key, 1, decision);
                            }
                        }
                        return decision.allowed();
                    };
                } else if (maxWait > 0) {
                    caller = (key) -> limiter.reserve(key, 1, maxWait).allowed();
                } else {
                    caller = (key) -> {
                        Decision decision = limiter.tryAcquire(key, 1);
                        return decision.allowed();
                    };
                }
                return new Subject(caller, store, factory::destroy);
            }
            if (variant.equals("evalsha")) {
                // the raw baseline: Lettuce's own async API on the very connection the store's factory shares
                ExposedFactory factory = new ExposedFactory(port);
                RedisAsyncCommands<ByteBuffer, ByteBuffer> commands = factory.sharedAsyncCommands();
                String sha = commands.scriptLoad("return 1").get(5, TimeUnit.SECONDS);
                long waitNanos = TimeUnit.MILLISECONDS.toNanos(120);
                return new Subject(
                        (key) -> {
                            ByteBuffer redisKey = ByteBuffer.wrap(redisKey(key));
                            Long one = commands.<Long>evalsha(sha, ScriptOutputType.INTEGER, redisKey)
                                    .get(waitNanos, TimeUnit.NANOSECONDS);
                            return one == 1L;
                        },
                        factory::destroy);
            }
            if (variant.equals("evalsha-gcra-bare")) {
                // the floor for any store that keeps its state in a script and reads Redis TIME: the
                // smallest GCRA (TIME, GET, SET PX, an integer reply) on the raw baseline's path
                ExposedFactory factory = new ExposedFactory(port);
                RedisAsyncCommands<ByteBuffer, ByteBuffer> commands = factory.sharedAsyncCommands();
                String sha = commands.scriptLoad(BARE_GCRA).get(5, TimeUnit.SECONDS);
                dev.throttle.GcraPolicy gcra = (dev.throttle.GcraPolicy) Workload.policy("gcra", regime);
                long[] numbers = gcra.algorithm().numbersOf(gcra); // {limit, interval, tolerance}
                ByteBuffer interval = ascii(Long.toString(numbers[1]));
                ByteBuffer tolerance = ascii(Long.toString(numbers[2]));
                long waitNanos = TimeUnit.MILLISECONDS.toNanos(120);
                return new Subject(
                        (key) -> {
                            ByteBuffer redisKey = ByteBuffer.wrap(redisKey(key));
                            ByteBuffer[] keys = {redisKey};
                            Long allowed = commands.<Long>evalsha(
                                            sha,
                                            ScriptOutputType.INTEGER,
                                            keys,
                                            interval.duplicate(),
                                            tolerance.duplicate())
                                    .get(waitNanos, TimeUnit.NANOSECONDS);
                            return allowed == 1L;
                        },
                        factory::destroy);
            }
            if (variant.equals("evalsha-spring")) {
                // the same EVALSHA through Spring Data Redis's reactive connection, as the store calls it
                LettuceConnectionFactory factory = factory(port);
                ReactiveRedisConnection connection = factory.getReactiveConnection();
                String sha = connection
                        .scriptingCommands()
                        .scriptLoad(ByteBuffer.wrap("return 1".getBytes(StandardCharsets.UTF_8)))
                        .block(Duration.ofSeconds(5));
                long waitNanos = TimeUnit.MILLISECONDS.toNanos(120);
                return new Subject(
                        (key) -> {
                            ByteBuffer redisKey = ByteBuffer.wrap(redisKey(key));
                            Long one = connection
                                    .scriptingCommands()
                                    .<Long>evalSha(sha, ReturnType.INTEGER, 1, redisKey)
                                    .next()
                                    .toFuture()
                                    .get(waitNanos, TimeUnit.NANOSECONDS);
                            return one == 1L;
                        },
                        connection,
                        factory::destroy);
            }
            if (variant.equals("bucket4j")) {
                RedisClient client = RedisClient.create(RedisURI.create(HOST, port));
                StatefulRedisConnection<byte[], byte[]> connection = client.connect(ByteArrayCodec.INSTANCE);
                LettuceBasedProxyManager<byte[]> buckets = Bucket4jLettuce.casBasedBuilder(connection)
                        .expirationAfterWrite(
                                ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax(Workload.IDLE))
                        .build();
                BucketConfiguration configuration = Workload.bucket4jConfiguration(regime);
                return new Subject(
                        (key) -> buckets.builder()
                                .build(("bucket4j:" + key).getBytes(StandardCharsets.UTF_8), configuration)
                                .tryConsumeAndReturnRemaining(1)
                                .isConsumed(),
                        connection::close,
                        client::shutdown);
            }
            throw new IllegalArgumentException("unknown variant " + variant);
        }

        /** The key the store would use, encoded per call as the store encodes it. */
        /** The anchors' one-key GCRA: TIME, GET, SET PX, 1 when allowed and 0 when refused. */
        private static final String BARE_GCRA = """
				local t = redis.call('TIME')
				local now = t[1] * 1000000 + t[2]
				local tat = tonumber(redis.call('GET', KEYS[1]) or 0) or 0
				if tat < now then tat = now end
				local trial = tat + tonumber(ARGV[1])
				if trial - now > tonumber(ARGV[2]) then return 0 end
				redis.call('SET', KEYS[1], string.format('%d', trial), 'PX', math.ceil((trial - now) / 1000))
				return 1
				""";

        private static ByteBuffer ascii(String text) {
            return ByteBuffer.wrap(text.getBytes(StandardCharsets.US_ASCII));
        }

        private static byte[] redisKey(String key) {
            return ("throttle:{" + Workload.POLICY + ":" + key + "}").getBytes(StandardCharsets.UTF_8);
        }

        private static LettuceConnectionFactory factory(int port) {
            LettuceConnectionFactory factory =
                    new LettuceConnectionFactory(new RedisStandaloneConfiguration(HOST, port));
            factory.afterPropertiesSet();
            factory.start();
            return factory;
        }

        @Override
        public void close() throws Exception {
            for (AutoCloseable resource : this.resources) {
                resource.close();
            }
        }
    }

    /** The factory, with its shared native connection in reach (it is protected). */
    static final class ExposedFactory extends LettuceConnectionFactory {

        ExposedFactory(int port) {
            super(new RedisStandaloneConfiguration(HOST, port));
            afterPropertiesSet();
            start();
        }

        /** Lettuce's own async API on the very connection that the factory shares (the store's). */
        @SuppressWarnings("unchecked")
        RedisAsyncCommands<ByteBuffer, ByteBuffer> sharedAsyncCommands() {
            return ((StatefulRedisConnection<ByteBuffer, ByteBuffer>) getSharedReactiveConnection()).async();
        }
    }

    /** A raw connection for administrative commands, outside the measured clients. */
    static String admin(int port, String... command) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(HOST, port), 2000);
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            out.write(resp(command));
            out.flush();
            BufferedReader in =
                    new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            String first = in.readLine();
            if (first == null) {
                throw new IOException("no reply to " + String.join(" ", command));
            }
            if (first.startsWith("-")) {
                throw new IOException("Redis: " + first);
            }
            if (first.startsWith("$")) {
                int length = Integer.parseInt(first.substring(1));
                if (length < 0) {
                    return null;
                }
                char[] body = new char[length];
                int read = 0;
                while (read < length) {
                    int r = in.read(body, read, length - read);
                    if (r < 0) {
                        break;
                    }
                    read += r;
                }
                return new String(body, 0, read);
            }
            return first.substring(1);
        }
    }

    static byte[] resp(String... command) {
        StringBuilder resp = new StringBuilder("*").append(command.length).append("\r\n");
        for (String part : command) {
            resp.append('$')
                    .append(part.getBytes(StandardCharsets.UTF_8).length)
                    .append("\r\n")
                    .append(part)
                    .append("\r\n");
        }
        return resp.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** CPU time this JVM has used, all threads. */
    static long clientCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean)
                        java.lang.management.ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    /** CPU time the Redis server has used ({@code INFO cpu}: user + sys, main thread included). */
    static double serverCpuSeconds(int port) throws IOException {
        double total = 0;
        for (String line : admin(port, "INFO", "cpu").split("\r?\n")) {
            if (line.startsWith("used_cpu_user:") || line.startsWith("used_cpu_sys:")) {
                total +=
                        Double.parseDouble(line.substring(line.indexOf(':') + 1).trim());
            }
        }
        return total;
    }

    /** {@code cmdstat_<name>:calls=N,...} as name to N. */
    static Map<String, Long> commandStats(int port) throws IOException {
        String info = admin(port, "INFO", "commandstats");
        Map<String, Long> stats = new LinkedHashMap<>();
        for (String line : info.split("\r?\n")) {
            if (line.startsWith("cmdstat_")) {
                String name = line.substring("cmdstat_".length(), line.indexOf(':'));
                int at = line.indexOf("calls=") + "calls=".length();
                int end = line.indexOf(',', at);
                stats.put(name, Long.parseLong(line.substring(at, end)));
            }
        }
        return stats;
    }

    /**
     * Counts, under MONITOR, the top-level commands of every client but the markers' between a start
     * and an end marker. Redis executes commands in order, so every command that a caller sent after
     * the start marker returned and before the end marker was sent lies between them.
     */
    static final class Monitor implements AutoCloseable {

        private static final String START = "throttle-bench-monitor-start";

        private static final String END = "throttle-bench-monitor-end";

        private final Socket socket;

        private final BufferedReader in;

        private Monitor(Socket socket, BufferedReader in) {
            this.socket = socket;
            this.in = in;
        }

        static Monitor start(int port) throws IOException {
            Socket socket = new Socket();
            socket.connect(new InetSocketAddress(HOST, port), 2000);
            socket.setSoTimeout(10_000);
            socket.getOutputStream().write(resp("MONITOR"));
            socket.getOutputStream().flush();
            BufferedReader in =
                    new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            String ok = in.readLine();
            if (!"+OK".equals(ok)) {
                socket.close();
                throw new IOException("MONITOR answered " + ok);
            }
            admin(port, "ECHO", START);
            Monitor monitor = new Monitor(socket, in);
            // read up to the start marker
            for (int i = 0; i < 10_000; i++) {
                String line = in.readLine();
                if (line == null) {
                    throw new IOException("MONITOR closed");
                }
                if (line.contains(START)) {
                    monitor.port = port;
                    return monitor;
                }
            }
            throw new IOException("no start marker under MONITOR");
        }

        private int port;

        /** Sends the end marker and counts the top-level commands seen before it. */
        long stop() throws IOException {
            admin(this.port, "ECHO", END);
            long topLevel = 0;
            for (long i = 0; i < 50_000_000L; i++) {
                String line = this.in.readLine();
                if (line == null) {
                    throw new IOException("MONITOR closed before the end marker");
                }
                if (line.contains(END)) {
                    return topLevel;
                }
                int open = line.indexOf('[');
                int close = line.indexOf(']', open);
                if (open >= 0 && close > open && !line.substring(open, close).contains("lua")) {
                    topLevel++;
                }
            }
            throw new IOException("no end marker under MONITOR");
        }

        @Override
        public void close() throws IOException {
            this.socket.close();
        }
    }
}
