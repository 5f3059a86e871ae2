package dev.throttle.spring.redis;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Collection;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.data.redis.connection.ReactiveRedisConnection;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import reactor.core.publisher.Mono;

/**
 * The Redis store's one reactive connection: obtained from the factory once, on a background thread,
 * and then kept. With Lettuce's shared native connection this is the one auto-reconnecting
 * connection the application already uses, so no call ever waits for a connect. While no connection
 * has been obtained yet (Redis down at startup), calls wait at most the store's timeout and a new
 * attempt starts with the next call. After a failure other than a timeout the connection is obtained
 * again, in case the factory replaced it. Thread-safe; lock-free.
 */
final class StoreConnection {

    private static final Duration WARM_UP_TIMEOUT = Duration.ofSeconds(2);

    private final ReactiveRedisConnectionFactory connectionFactory;

    /** The scripts (UTF-8) to load at the warm-up: those of the policies bound by then. */
    private final Supplier<Collection<byte[]>> scripts;

    /** Warm up once, at startup: a reconnect during an outage must not queue extra commands. */
    private final AtomicBoolean warmedUp = new AtomicBoolean();

    private final AtomicReference<Mono<ReactiveRedisConnection>> connection = new AtomicReference<>();

    private final AtomicReference<CompletableFuture<ReactiveRedisConnection>> connecting = new AtomicReference<>();

    /** Warns when Redis may evict the store's keys; at the first connect and at each reconnect. */
    private final MemoryPolicyCheck memoryPolicy = new MemoryPolicyCheck();

    /** Completes when the warm-up has run, whether or not Redis answered it. */
    private final CompletableFuture<Void> warmUpDone = new CompletableFuture<>();

    /** The connection the warm-up loaded scripts on; null until it has pinged Redis. */
    private volatile ReactiveRedisConnection warmConnection;

    /** Set once the application stops: no connect is started after it. */
    private volatile boolean stopped;

    /** The thread of the connect under way, if one is. */
    private final AtomicReference<@Nullable Thread> connectingThread = new AtomicReference<>();

    /** Runs on the connecting thread once a connection is obtained (a Cluster's topology is read then). */
    private final Runnable connected;

    StoreConnection(
            ReactiveRedisConnectionFactory connectionFactory,
            Supplier<Collection<byte[]>> scripts,
            Runnable connected) {
        this.connectionFactory = connectionFactory;
        this.scripts = scripts;
        this.connected = connected;
    }

    /**
     * The connection; obtained once (on a background thread, since a connect may block) and then reused.
     * A caller waiting for the connect is given a future of its own ({@link #awaiting}).
     */
    Mono<ReactiveRedisConnection> get() {
        Mono<ReactiveRedisConnection> ready = this.connection.get();
        return (ready != null) ? ready : awaiting(connect());
    }

    /**
     * Waits for a connect that other callers share, through a future of this caller's own: a caller
     * that gives up (its timeout) cancels only that future, and the connect's failure, when it comes,
     * is not reported to Reactor as an error dropped after a cancel (logged at ERROR with its stack,
     * once for every caller that gave up, while Redis does not answer).
     */
    static <T> Mono<T> awaiting(CompletableFuture<T> shared) {
        if (shared.isDone() && !shared.isCompletedExceptionally()) {
            // connected: nothing to wait for, nor to cancel (durability: replicated asks once per write)
            return Mono.just(shared.join());
        }
        return Mono.fromFuture(shared.thenApply(Function.identity()));
    }

    /**
     * Forgets the connection after a call failed other than by timing out (say, the factory closed
     * and replaced its shared connection), so the next call obtains it again. Cheap when nothing
     * changed: the factory hands back its existing shared connection.
     */
    void failed() {
        this.connection.set(null);
        CompletableFuture<ReactiveRedisConnection> pending = this.connecting.get();
        if (pending != null && pending.isDone()) {
            this.connecting.compareAndSet(pending, null);
        }
    }

    CompletableFuture<ReactiveRedisConnection> connect() {
        for (; ; ) {
            CompletableFuture<ReactiveRedisConnection> pending = this.connecting.get();
            if (pending != null && !pending.isCompletedExceptionally()) {
                return pending;
            }
            if (this.stopped) {
                return CompletableFuture.failedFuture(
                        new IllegalStateException("The application is stopping: no connect to Redis is started"));
            }
            CompletableFuture<ReactiveRedisConnection> attempt = new CompletableFuture<>();
            if (this.connecting.compareAndSet(pending, attempt)) {
                Thread thread = new Thread(
                        () -> {
                            try {
                                ReactiveRedisConnection obtained = this.connectionFactory.getReactiveConnection();
                                this.connection.set(Mono.just(obtained));
                                attempt.complete(obtained);
                                this.connected.run();
                                if (this.warmedUp.compareAndSet(false, true)) {
                                    warmUp(obtained);
                                } else {
                                    this.memoryPolicy.check(obtained, WARM_UP_TIMEOUT);
                                }
                            } catch (RuntimeException | Error ex) {
                                attempt.completeExceptionally(ex);
                            } finally {
                                this.connectingThread.compareAndSet(Thread.currentThread(), null);
                            }
                        },
                        "throttle-redis-connect");
                thread.setDaemon(true);
                this.connectingThread.set(thread);
                thread.start();
                if (this.stopped) {
                    thread.interrupt();
                }
                return attempt;
            }
        }
    }

    /**
     * Opens the (lazy) native connection and loads the scripts, on this background thread and
     * after the connection is published (calls never wait for it), so that the first decisions
     * after startup need not spend their timeout on a TCP connect and a NOSCRIPT round trip. Best
     * effort: a failure here only means the first call pays instead.
     */
    private void warmUp(ReactiveRedisConnection connection) {
        try {
            connection.ping().block(WARM_UP_TIMEOUT);
            // from here on a policy bound later has its script loaded as it is bound; the ones bound
            // so far are loaded now (a policy bound meanwhile may be loaded twice, which is harmless)
            this.warmConnection = connection;
            for (byte[] script : this.scripts.get()) {
                connection
                        .scriptingCommands()
                        .scriptLoad(ByteBuffer.wrap(script))
                        .block(WARM_UP_TIMEOUT);
            }
        } catch (RuntimeException ex) {
            // Redis down or a cluster that routes SCRIPT LOAD elsewhere: EVALSHA falls back to EVAL
        } finally {
            // after the scripts, so that decisions find them loaded as early as without this look,
            // and only once Redis has answered the ping; never throws
            if (this.warmConnection == connection) {
                this.memoryPolicy.check(connection, WARM_UP_TIMEOUT);
            }
            this.warmUpDone.complete(null);
        }
    }

    /** Completes when the warm-up has run. */
    CompletableFuture<Void> warmUpDone() {
        return this.warmUpDone;
    }

    /**
     * Loads a newly bound policy's script without waiting for it, once the warm-up has run: the
     * store connects (and warms up) as it is created, usually before the throttler binds its
     * policies. Best effort, like the warm-up: a script not loaded costs its first call an EVAL.
     */
    void loadScriptIfWarm(byte[] script) {
        ReactiveRedisConnection connection = this.warmConnection;
        if (connection != null) {
            connection.scriptingCommands().scriptLoad(ByteBuffer.wrap(script)).subscribe((sha) -> {}, (ex) -> {});
        }
    }

    /**
     * Starts no connect from now on and gives up the one under way: a connect to a Redis that takes
     * connections but does not answer holds the connection factory's lock for the client's timeout (a
     * minute by default), and the factory takes that lock to stop, so the application's shutdown would
     * wait for it. A connection obtained already is kept for the calls still being made.
     */
    void stop() {
        this.stopped = true;
        Thread thread = this.connectingThread.get();
        if (thread != null) {
            thread.interrupt();
        }
    }

    /** Releases the reactive connection handle; a shared native connection stays open (it is the factory's). */
    void close() {
        stop();
        CompletableFuture<ReactiveRedisConnection> pending = this.connecting.getAndSet(null);
        this.connection.set(null);
        this.warmConnection = null;
        if (pending != null) {
            pending.thenAccept(ReactiveRedisConnection::close);
        }
    }
}
