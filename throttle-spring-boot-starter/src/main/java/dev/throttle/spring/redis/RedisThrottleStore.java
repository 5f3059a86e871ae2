package dev.throttle.spring.redis;

import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.ThrottleStore;
import dev.throttle.TimeSource;
import dev.throttle.resilience.RefusalMemory;
import dev.throttle.spring.client.RemotePauses;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.connection.RedisConnectionFactory;

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
 * <p>The connection comes from the factory once, on a background thread, and is kept
 * ({@link StoreConnection}).
 *
 * <p>Near cache of refusals ({@link NearCacheSettings}, off unless given): a refusal whose Retry-After
 * is long enough is remembered on this instance until its time has passed, and later calls for the
 * key are refused here, with the time left, without a call to Redis ({@link NearCache}). Resets,
 * refunds and policy changes are published on {@code <key-prefix>:events} and drop the key's entry on
 * every instance ({@link RedisThrottleEvents}). A policy bound again with other settings (a change
 * at run time) gets a new limiter, and its remembered refusals are dropped everywhere.
 *
 * <p>When Lettuce traces its commands (its {@code ClientResources} have a tracing, as Spring Boot
 * gives them with an {@code ObservationRegistry}), each call's commands are children of the caller's
 * current observation or span, a decision's {@code throttle.decision} among them, although Lettuce's
 * reactive API sends and answers them on its own threads.
 *
 * <p>Thread-safe; lock-free on the decision path.
 */
public final class RedisThrottleStore implements ThrottleStore {

    /** Default key prefix, as {@code throttle.store.redis.key-prefix}. */
    public static final String DEFAULT_KEY_PREFIX = "throttle";

    /** Default bound on each call, as {@code throttle.store.redis.timeout}. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(1);

    /** By policy, numbers and all: a policy's plans, and its numbers after a change, each have their own. */
    private final Map<Policy, RedisLimiter> limiters = new ConcurrentHashMap<>();

    private final StoreConnection connection;

    /** Refusals remembered on this instance; null without a near cache. */
    private final @Nullable NearCache nearCache;

    /** The events channel's subscription; null without a near cache or without an imperative factory. */
    private final @Nullable RedisThrottleEvents events;

    /** What the limiters share with the store: its settings, connection, clock and events channel. */
    private final RedisCalls calls;

    /** The writes that wait for a replica; null when no policy has {@code durability: replicated}. */
    private final @Nullable ReplicatedWrites replicatedWrites;

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
     * Creates a store without a near cache; with a {@code clock}, decisions read it instead of the
     * Redis server's clock ({@code throttle.store.redis.clock=client}, and tests that drive a
     * {@link dev.throttle.ManualTimeSource}).
     * @param connectionFactory Spring Boot's connection factory (a {@code LettuceConnectionFactory})
     * @param keyPrefix the first part of every key
     * @param timeout the longest any call waits for Redis
     * @param clock the clock to pass to every script, or null to use Redis {@code TIME}
     * @throws IllegalArgumentException when a setting is invalid, with a message that names its
     * property: the one place these settings are checked
     */
    public RedisThrottleStore(
            ReactiveRedisConnectionFactory connectionFactory,
            String keyPrefix,
            Duration timeout,
            @Nullable TimeSource clock) {
        this(connectionFactory, keyPrefix, timeout, clock, NearCacheSettings.disabled());
    }

    /**
     * Creates a store, with a near cache of refusals unless {@code nearCache} is disabled. Its events
     * are subscribed to through a listener container on {@code connectionFactory} when it is also a
     * {@link RedisConnectionFactory} (as Lettuce's is); otherwise this instance publishes its events
     * but hears none.
     * @param connectionFactory Spring Boot's connection factory (a {@code LettuceConnectionFactory})
     * @param keyPrefix the first part of every key
     * @param timeout the longest any call waits for Redis
     * @param clock the clock to pass to every script, or null to use Redis {@code TIME}
     * @param nearCache the near cache's settings
     * @throws IllegalArgumentException when a setting is invalid, with a message that names its property
     */
    public RedisThrottleStore(
            ReactiveRedisConnectionFactory connectionFactory,
            String keyPrefix,
            Duration timeout,
            @Nullable TimeSource clock,
            NearCacheSettings nearCache) {
        this(connectionFactory, keyPrefix, timeout, clock, nearCache, true);
    }

    /**
     * Creates a store as above, sending acquires that wait at the same moment together (one call per
     * batch, each key decided as alone: see {@code docs/redis.md}) unless {@code batching} is false.
     * @param connectionFactory Spring Boot's connection factory (a {@code LettuceConnectionFactory})
     * @param keyPrefix the first part of every key
     * @param timeout the longest any call waits for Redis
     * @param clock the clock to pass to every script, or null to use Redis {@code TIME}
     * @param nearCache the near cache's settings
     * @param batching whether acquires of one policy that wait at the same moment leave in one call
     * (never on a Redis Cluster)
     * @throws IllegalArgumentException when a setting is invalid, with a message that names its property
     */
    public RedisThrottleStore(
            ReactiveRedisConnectionFactory connectionFactory,
            String keyPrefix,
            Duration timeout,
            @Nullable TimeSource clock,
            NearCacheSettings nearCache,
            boolean batching) {
        this(connectionFactory, keyPrefix, timeout, clock, nearCache, batching, Set.of());
    }

    /**
     * Creates a store as above whose policies named in {@code replicatedPolicies}
     * ({@code durability: replicated}) answer a write only once a replica has it: each of their
     * acquires, reservations, charges and resets is followed by {@code WAIT 1} on a connection of its
     * own, and one that no replica confirms within three quarters of {@code timeout} fails, so that the
     * failure mode answers and a failure policy keeps the acquire for the store (see
     * {@code docs/operations.md}). On a Redis Cluster, {@code WAIT} goes to the key's master.
     * @param connectionFactory Spring Boot's connection factory (a {@code LettuceConnectionFactory})
     * @param keyPrefix the first part of every key
     * @param timeout the longest any call waits for Redis
     * @param clock the clock to pass to every script, or null to use Redis {@code TIME}
     * @param nearCache the near cache's settings
     * @param batching whether acquires of one policy that wait at the same moment leave in one call
     * (never on a Redis Cluster, nor for the policies in {@code replicatedPolicies})
     * @param replicatedPolicies the names of the policies whose writes wait for a replica
     * @throws IllegalArgumentException when a setting is invalid, with a message that names its
     * property, or when {@code replicatedPolicies} is not empty and the factory is not Lettuce's
     */
    public RedisThrottleStore(
            ReactiveRedisConnectionFactory connectionFactory,
            String keyPrefix,
            Duration timeout,
            @Nullable TimeSource clock,
            NearCacheSettings nearCache,
            boolean batching,
            Set<String> replicatedPolicies) {
        this(
                connectionFactory,
                keyPrefix,
                timeout,
                clock,
                nearCache,
                (clock != null) ? clock : TimeSource.system(),
                batching,
                replicatedPolicies);
    }

    /**
     * Creates a store as above whose fixed windows of the calendar are sent the boundaries around
     * {@code applicationClock}'s time (the scripts still decide by Redis {@code TIME} unless a
     * {@code clock} is given): tests that put this process's clock off the server's.
     */
    RedisThrottleStore(
            ReactiveRedisConnectionFactory connectionFactory,
            String keyPrefix,
            Duration timeout,
            @Nullable TimeSource clock,
            NearCacheSettings nearCache,
            TimeSource applicationClock,
            boolean batching,
            Set<String> replicatedPolicies) {
        if (connectionFactory == null) {
            throw new IllegalArgumentException("connectionFactory is required");
        }
        if (keyPrefix == null || keyPrefix.isBlank() || keyPrefix.contains("{") || keyPrefix.contains("}")) {
            throw new IllegalArgumentException(
                    "throttle.store.redis.key-prefix must be non-blank and free of '{' and '}', was '" + keyPrefix
                            + "'");
        }
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("throttle.store.redis.timeout must be positive, was " + timeout);
        }
        this.replicatedWrites = replicatedPolicies.isEmpty()
                ? null
                : ReplicatedWrites.of(
                        connectionFactory, timeout, "policies " + String.join(", ", new TreeSet<>(replicatedPolicies)));
        ClusterNodes clusterNodes = ClusterNodes.of(connectionFactory);
        this.connection = new StoreConnection(
                connectionFactory,
                () -> this.limiters.values().stream()
                        .map(RedisLimiter::scriptBytes)
                        .toList(),
                (clusterNodes != null) ? clusterNodes::connected : () -> {});
        String sender = RedisThrottleEvents.newSender();
        ByteBuffer channel = null;
        if (nearCache != null && nearCache.isEnabled()) {
            this.nearCache = new NearCache(nearCache, clock);
            String channelName = keyPrefix + ":events";
            channel = ByteBuffer.wrap(channelName.getBytes(StandardCharsets.UTF_8));
            this.events = (connectionFactory instanceof RedisConnectionFactory imperative)
                    ? new RedisThrottleEvents(imperative, channelName, this.nearCache, sender)
                    : null;
        } else {
            this.nearCache = null;
            this.events = null;
        }
        this.calls = new RedisCalls(
                keyPrefix,
                timeout,
                clock,
                applicationClock,
                this.connection,
                this.events,
                CallerTrace.of(connectionFactory),
                sender,
                channel,
                clusterNodes,
                batching,
                this.replicatedWrites,
                replicatedPolicies);
        // connect now, off this thread, so that the first request does not pay for it
        this.connection.connect();
        if (this.events != null) {
            this.events.start();
        }
    }

    /**
     * Returns the limiter of {@code policy}: its script over the keys of its name. A policy bound again
     * under other numbers (a plan, a change at run time) gets a limiter and script of its own over the
     * same keys, whose state every script reads whatever numbers wrote it; limiters handed out before
     * keep their own numbers. A remembered refusal answers only the limiter that was refused, so one
     * under other numbers never answers these; still, every instance is told to forget the policy's
     * refusals, so that a change made everywhere takes effect everywhere at once.
     */
    @Override
    public Limiter limiter(Policy policy) {
        RedisLimiter limiter = this.limiters.get(policy);
        if (limiter == null) {
            RedisLimiter created =
                    new RedisLimiter(this.calls, policy, nearCacheOf(policy.name()), nearCacheSettings());
            limiter = this.limiters.putIfAbsent(policy, created);
            if (limiter == null) {
                limiter = created;
                this.connection.loadScriptIfWarm(created.scriptBytes());
                if (this.limiters.keySet().stream()
                        .anyMatch((p) -> p.name().equals(policy.name()) && !p.equals(policy))) {
                    policyChanged(policy.name());
                }
            }
        }
        return limiter;
    }

    /** Forgets the policy's remembered refusals here, and tells every other instance to. */
    private void policyChanged(String policy) {
        if (this.nearCache != null) {
            this.nearCache.forgetPolicy(policy);
            this.calls.publishPolicy(policy).subscribe((done) -> {}, (ex) -> {});
        }
    }

    @Override
    public String kind() {
        return RedisCalls.KIND;
    }

    /**
     * Returns the Redis key that holds {@code key}'s state under {@code policy}.
     * @param policy the policy's name
     * @param key the key, as the {@link dev.throttle.Throttler} normalized it
     * @return {@code <prefix>:{<policy>:<key>}}
     */
    public String redisKey(String policy, String key) {
        return PolicyScript.redisKey(PolicyScript.keyStart(this.calls.keyPrefix(), policy), key);
    }

    /**
     * Returns the key prefix.
     * @return the prefix
     */
    public String keyPrefix() {
        return this.calls.keyPrefix();
    }

    /**
     * Returns the bound on each call.
     * @return the timeout
     */
    public Duration timeout() {
        return this.calls.timeout();
    }

    /**
     * Returns the near cache's settings.
     * @return the settings; disabled when the store has no near cache
     */
    public NearCacheSettings nearCacheSettings() {
        return (this.nearCache != null) ? this.nearCache.settings() : NearCacheSettings.disabled();
    }

    /**
     * Returns how many refusals this instance remembers, all policies together: the gauge
     * {@code throttle.near-cache.size}.
     * @return an estimate (entries past their time may still be counted); 0 without a near cache
     */
    public long nearCacheSize() {
        return (this.nearCache != null) ? this.nearCache.size() : 0;
    }

    /** The near cache's entries of a policy, or null without a near cache. */
    private @Nullable RefusalMemory nearCacheOf(String policy) {
        return (this.nearCache != null) ? this.nearCache.of(policy) : null;
    }

    /**
     * Tells {@code listener} of every key another instance resets or gives back (a released
     * concurrency slot), as heard on the events channel: only with the near cache, and only for the
     * policies it answers (the others publish nothing); waiters otherwise try again after their hint.
     */
    @Override
    public void onGivenBack(BiConsumer<String, String> listener) {
        if (this.events != null) {
            this.events.onGivenBack(listener);
        }
    }

    /** Completes once the events channel is subscribed; never without a subscription. */
    CompletableFuture<Void> eventsSubscribed() {
        return (this.events != null) ? this.events.subscribed() : new CompletableFuture<>();
    }

    /**
     * Asks Redis to run {@code TIME} inside a script, as every decision does on the server's clock:
     * some managed Redis offerings refuse it. Waits for the connection and the answer at most
     * {@code bound}.
     * @param bound the longest wait
     * @return Redis's error when it refused; null when it ran it, or did not answer (a Redis that is
     * down is the failure mode's business, not a configuration error)
     */
    public @Nullable String serverTimeRefusal(Duration bound) {
        return this.calls.serverTimeRefusal(bound);
    }

    /**
     * Completes when the warm-up has run: the scripts of the policies bound by then are loaded, and a
     * policy bound later has its script loaded as it is bound.
     * @return the warm-up's completion
     */
    CompletableFuture<Void> warmUpDone() {
        return this.connection.warmUpDone();
    }

    /**
     * Returns where the remote pauses of throttled outgoing clients are kept in this Redis: on the
     * store's connection, under its key prefix, within its timeout.
     * @return the pauses
     */
    public RemotePauses remotePauses() {
        return new RedisRemotePauses(this.connection, keyPrefix(), timeout());
    }

    /**
     * Stops every connect to Redis that the store has under way or would start, ahead of the
     * connection factory's own stop: a connect to a Redis that takes connections but does not answer
     * holds the factory's lock for the client's timeout (a minute by default), and the factory takes
     * that lock to stop. Calls made after this one still decide on a connection obtained before it;
     * without one they get the failure mode. {@link #close} does this too.
     */
    public void stopConnecting() {
        // the store's connect first: it may hold the factory's lock that the subscription waits for
        this.connection.stop();
        if (this.events != null) {
            this.events.stop();
        }
    }

    /**
     * Releases the store's reactive connection handle and its events subscription. With Lettuce's
     * shared native connection (the default) the connection itself stays open: it belongs to the
     * application's connection factory.
     */
    @Override
    public void close() {
        stopConnecting();
        this.connection.close();
        if (this.replicatedWrites != null) {
            this.replicatedWrites.close();
        }
    }
}
