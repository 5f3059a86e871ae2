package dev.throttle.spring.redis;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

import reactor.core.publisher.Mono;

import org.jspecify.annotations.Nullable;

import org.springframework.data.redis.connection.ReactiveRedisConnection;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;

import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.ThrottleStore;
import dev.throttle.TimeSource;

/**
 * Throttling state in Redis, shared by every application instance: standalone, Sentinel or Cluster,
 * whichever Spring Boot's own connection ({@code spring.data.redis.*}, Lettuce) points at.
 *
 * <p>Each decision, refund and peek is one {@code EVALSHA} of the policy's Lua script
 * ({@link RedisThrottleScripts}; {@code EVAL} once per node when the script is not cached there yet);
 * a reset is one {@code DEL}. Scripts read the Redis server's {@code TIME}, so the clocks of
 * application servers never matter, and set {@code PX} on every write to the time until the key's
 * state is neutral again. One key per policy and key, {@code <prefix>:{<policy>:<key>}}: the hash
 * tag keeps the key's slot fixed, so Cluster needs nothing special.
 *
 * <p>Every call is bounded by the timeout: a call that Redis has not answered by then fails with
 * {@link RedisStoreException} (and its command is cancelled, so Lettuce does not replay it after a
 * reconnect). Wrap the store in a {@link dev.throttle.resilience.ResilientThrottleStore} to turn
 * failures into a failure mode. The synchronous methods wait for the answer; the {@code *Async}
 * methods never block.
 *
 * <p>The connection comes from the factory once, on a background thread, and is kept: with Lettuce's
 * shared native connection this is the one auto-reconnecting connection the application already
 * uses, so no call ever waits for a connect. While no connection has been obtained yet (Redis down
 * at startup), calls wait at most the timeout and a new attempt starts with the next call. After a
 * failure other than a timeout the connection is obtained again, in case the factory replaced it.
 *
 * <p>Thread-safe; lock-free on the decision path.
 */
public final class RedisThrottleStore implements ThrottleStore {

	/** Default key prefix, as {@code throttle.store.redis.key-prefix}. */
	public static final String DEFAULT_KEY_PREFIX = "throttle";

	/** Default bound on each call, as {@code throttle.store.redis.timeout}. */
	public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(1);

	/** An empty {@code now} argument: the script reads Redis {@code TIME}. Empty, so nothing can change it; callers duplicate it. */
	private static final ByteBuffer REDIS_TIME = ByteBuffer.allocate(0);

	private final ReactiveRedisConnectionFactory connectionFactory;

	private final String keyPrefix;

	private final Duration timeout;

	private static final Duration WARM_UP_TIMEOUT = Duration.ofSeconds(2);

	/** Warm up once, at startup: a reconnect during an outage must not queue extra commands. */
	private final java.util.concurrent.atomic.AtomicBoolean warmedUp = new java.util.concurrent.atomic.AtomicBoolean();

	private final TimeSource clock;

	/** By policy, numbers and all: a policy's plans, and its numbers after a change, each have their own. */
	private final Map<Policy, RedisLimiter> limiters = new ConcurrentHashMap<>();

	private final AtomicReference<Mono<ReactiveRedisConnection>> connection = new AtomicReference<>();

	private final AtomicReference<CompletableFuture<ReactiveRedisConnection>> connecting = new AtomicReference<>();

	/** Completes when the warm-up has run, whether or not Redis answered it. */
	private final CompletableFuture<Void> warmUpDone = new CompletableFuture<>();

	/** The connection the warm-up loaded scripts on; null until it has pinged Redis. */
	private volatile ReactiveRedisConnection warmConnection;

	/**
	 * Creates a store with the default key prefix and timeout.
	 * @param connectionFactory Spring Boot's connection factory (a {@code LettuceConnectionFactory})
	 */
	public RedisThrottleStore(ReactiveRedisConnectionFactory connectionFactory) {
		this(connectionFactory, DEFAULT_KEY_PREFIX, DEFAULT_TIMEOUT);
	}

	/**
	 * Creates a store whose decisions read the Redis server's clock.
	 * @param connectionFactory Spring Boot's connection factory (a {@code LettuceConnectionFactory})
	 * @param keyPrefix the first part of every key, as {@code throttle.store.redis.key-prefix}
	 * @param timeout the longest any call waits for Redis, as {@code throttle.store.redis.timeout}
	 */
	public RedisThrottleStore(ReactiveRedisConnectionFactory connectionFactory, String keyPrefix, Duration timeout) {
		this(connectionFactory, keyPrefix, timeout, null);
	}

	/**
	 * Creates a store; with a {@code clock}, decisions read it instead of the Redis server's clock
	 * (tests drive a {@link dev.throttle.ManualTimeSource} this way). Production code passes null.
	 * @param connectionFactory Spring Boot's connection factory (a {@code LettuceConnectionFactory})
	 * @param keyPrefix the first part of every key
	 * @param timeout the longest any call waits for Redis
	 * @param clock the clock to pass to every script, or null to use Redis {@code TIME}
	 * @throws IllegalArgumentException when a setting is invalid, with a message that names its
	 * property: the one place these settings are checked
	 */
	public RedisThrottleStore(ReactiveRedisConnectionFactory connectionFactory, String keyPrefix, Duration timeout,
			@Nullable TimeSource clock) {
		if (connectionFactory == null) {
			throw new IllegalArgumentException("connectionFactory is required");
		}
		if (keyPrefix == null || keyPrefix.isBlank() || keyPrefix.contains("{") || keyPrefix.contains("}")) {
			throw new IllegalArgumentException(
					"throttle.store.redis.key-prefix must be non-blank and free of '{' and '}', was '" + keyPrefix + "'");
		}
		if (timeout == null || timeout.isNegative() || timeout.isZero()) {
			throw new IllegalArgumentException("throttle.store.redis.timeout must be positive, was " + timeout);
		}
		this.connectionFactory = connectionFactory;
		this.keyPrefix = keyPrefix;
		this.timeout = timeout;
		this.clock = clock;
		// connect now, off this thread, so that the first request does not pay for it
		connect();
	}

	/**
	 * Returns the limiter of {@code policy}: its script over the keys of its name. A policy bound again
	 * under other numbers (a plan, a change at run time) gets a script of its own over the same keys,
	 * whose state every script reads whatever numbers wrote it.
	 */
	@Override
	public Limiter limiter(Policy policy) {
		RedisLimiter limiter = this.limiters.get(policy);
		if (limiter == null) {
			RedisLimiter created = new RedisLimiter(this, policy);
			limiter = this.limiters.putIfAbsent(policy, created);
			if (limiter == null) {
				limiter = created;
				loadScriptIfWarm(created);
			}
		}
		return limiter;
	}

	@Override
	public String kind() {
		return "redis";
	}

	/**
	 * Returns the Redis key that holds {@code key}'s state under {@code policy}.
	 * @param policy the policy's name
	 * @param key the key, as the {@link dev.throttle.Throttler} normalized it
	 * @return {@code <prefix>:{<policy>:<key>}}
	 */
	public String redisKey(String policy, String key) {
		return this.keyPrefix + ":{" + policy + ":" + key + "}";
	}

	/**
	 * Returns the key prefix.
	 * @return the prefix
	 */
	public String keyPrefix() {
		return this.keyPrefix;
	}

	/**
	 * Returns the bound on each call.
	 * @return the timeout
	 */
	public Duration timeout() {
		return this.timeout;
	}

	/** The {@code now} argument of a script: empty (use Redis TIME) or the override clock's reading. */
	ByteBuffer nowArgument() {
		return (this.clock != null)
				? ByteBuffer.wrap(Long.toString(this.clock.currentTimeMillis()).getBytes(StandardCharsets.US_ASCII))
				: REDIS_TIME;
	}

	/**
	 * The store's connection; obtained once (on a background thread, since a connect may block)
	 * and then reused.
	 */
	Mono<ReactiveRedisConnection> connection() {
		Mono<ReactiveRedisConnection> ready = this.connection.get();
		return (ready != null) ? ready : Mono.fromFuture(connect(), true);
	}

	/**
	 * Forgets the connection after a call failed other than by timing out (say, the factory closed
	 * and replaced its shared connection), so the next call obtains it again. Cheap when nothing
	 * changed: the factory hands back its existing shared connection.
	 */
	void connectionFailed() {
		this.connection.set(null);
		CompletableFuture<ReactiveRedisConnection> pending = this.connecting.get();
		if (pending != null && pending.isDone()) {
			this.connecting.compareAndSet(pending, null);
		}
	}

	private CompletableFuture<ReactiveRedisConnection> connect() {
		for (;;) {
			CompletableFuture<ReactiveRedisConnection> pending = this.connecting.get();
			if (pending != null && !pending.isCompletedExceptionally()) {
				return pending;
			}
			CompletableFuture<ReactiveRedisConnection> attempt = new CompletableFuture<>();
			if (this.connecting.compareAndSet(pending, attempt)) {
				Thread thread = new Thread(() -> {
					try {
						ReactiveRedisConnection obtained = this.connectionFactory.getReactiveConnection();
						this.connection.set(Mono.just(obtained));
						attempt.complete(obtained);
						if (this.warmedUp.compareAndSet(false, true)) {
							warmUp(obtained);
						}
					}
					catch (RuntimeException | Error ex) {
						attempt.completeExceptionally(ex);
					}
				}, "throttle-redis-connect");
				thread.setDaemon(true);
				thread.start();
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
			for (RedisLimiter limiter : this.limiters.values()) {
				connection.scriptingCommands().scriptLoad(ByteBuffer.wrap(limiter.scriptBytes())).block(WARM_UP_TIMEOUT);
			}
		}
		catch (RuntimeException ex) {
			// Redis down or a cluster that routes SCRIPT LOAD elsewhere: EVALSHA falls back to EVAL
		}
		finally {
			this.warmUpDone.complete(null);
		}
	}

	/**
	 * Completes when the warm-up has run: the scripts of the policies bound by then are loaded, and a
	 * policy bound later has its script loaded as it is bound.
	 * @return the warm-up's completion
	 */
	CompletableFuture<Void> warmUpDone() {
		return this.warmUpDone;
	}

	/**
	 * Loads a newly bound policy's script without waiting for it, once the warm-up has run: the
	 * store connects (and warms up) as it is created, usually before the throttler binds its
	 * policies. Best effort, like the warm-up: a script not loaded costs its first call an EVAL.
	 */
	private void loadScriptIfWarm(RedisLimiter limiter) {
		ReactiveRedisConnection connection = this.warmConnection;
		if (connection != null) {
			connection.scriptingCommands()
				.scriptLoad(ByteBuffer.wrap(limiter.scriptBytes()))
				.subscribe((sha) -> {
				}, (ex) -> {
				});
		}
	}

	/**
	 * Releases the store's reactive connection handle. With Lettuce's shared native connection (the
	 * default) the connection itself stays open: it belongs to the application's connection factory.
	 */
	@Override
	public void close() {
		CompletableFuture<ReactiveRedisConnection> pending = this.connecting.getAndSet(null);
		this.connection.set(null);
		this.warmConnection = null;
		if (pending != null) {
			pending.thenAccept(ReactiveRedisConnection::close);
		}
	}

}
