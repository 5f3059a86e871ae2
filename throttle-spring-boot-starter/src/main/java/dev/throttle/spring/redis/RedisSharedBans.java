package dev.throttle.spring.redis;

import dev.throttle.spring.bans.ActiveBan;
import dev.throttle.spring.bans.Bans;
import dev.throttle.spring.bans.SharedBans;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.data.redis.connection.Message;
import org.springframework.data.redis.connection.MessageListener;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.SubscriptionListener;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.data.redis.core.ZSetOperations;
import org.springframework.data.redis.core.script.DefaultRedisScript;

/**
 * The fleet's active bans in Redis: one sorted set, {@code {<key-prefix>}:bans}, whose members are
 * {@code <ban>\n<key>} scored by the moment each ban ends (epoch milliseconds, on the application's
 * clock, as every instance expires its bans by that clock too); one script stores a ban (dropping the
 * ended ones first, so that the set holds only bans not yet over) and publishes it on
 * {@code <key-prefix>:bans}, another lifts one and publishes that. Reads take only bans that have not
 * ended. The key has no expiry: what it holds is bounded by the bans of the last {@code for}. An
 * instance that missed messages (the subscription was lost) is told to read every ban again when it
 * is subscribed again. Thread-safe; never makes a caller of {@link #save} or {@link #lift} wait.
 */
public final class RedisSharedBans implements SharedBans {

    private static final Log logger = LogFactory.getLog(RedisSharedBans.class);

    private static final String SAVE = """
            redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
            local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
            if (not held) or tonumber(held) < tonumber(ARGV[2]) then
                redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
            end
            redis.call('PUBLISH', ARGV[4], '+' .. ARGV[2] .. '\\n' .. ARGV[1])
            return 1
            """;

    private static final String LIFT = """
            redis.call('ZREM', KEYS[1], ARGV[1])
            redis.call('PUBLISH', ARGV[2], '-\\n' .. ARGV[1])
            return 1
            """;

    private final StringRedisTemplate redis;

    private final DefaultRedisScript<Long> save = new DefaultRedisScript<>(SAVE, Long.class);

    private static final byte[] SAVE_BYTES = SAVE.getBytes(StandardCharsets.UTF_8);

    private final String saveSha = this.save.getSha1();

    /** The bans whose saves wait for a replica. */
    private final Set<String> replicatedBans;

    /** The saves that wait for a replica; null when no ban has {@code durability: replicated}. */
    private final @Nullable ReplicatedWrites replicated;

    /** Stores again, a second later, a ban that no replica confirmed. */
    private final ScheduledExecutorService retries = Executors.newSingleThreadScheduledExecutor((task) -> {
        Thread thread = new Thread(task, "throttle-bans-retry");
        thread.setDaemon(true);
        return thread;
    });

    private final DefaultRedisScript<Long> lift = new DefaultRedisScript<>(LIFT, Long.class);

    private final String bans;

    private final String channel;

    private final RedisConnectionFactory connectionFactory;

    /** The subscription to the channel, once {@link #listen} was called. */
    private volatile @Nullable RedisSubscription subscription;

    /** Runs what the listener does with a message, in order, off the subscription's (I/O) thread. */
    private final ExecutorService listening = Executors.newSingleThreadExecutor((task) -> {
        Thread thread = new Thread(task, "throttle-bans");
        thread.setDaemon(true);
        return thread;
    });

    /** Runs saves, lifts and reads, so that no request thread (or event loop) waits for Redis. */
    private final ExecutorService calls = Executors.newCachedThreadPool((task) -> {
        Thread thread = new Thread(task, "throttle-bans-call");
        thread.setDaemon(true);
        return thread;
    });

    /**
     * Creates the shared bans on Spring Boot's Redis connection.
     * @param connectionFactory the connection (standalone, Sentinel or Cluster)
     * @param keyPrefix the store's key prefix ({@code throttle.store.redis.key-prefix})
     */
    public RedisSharedBans(RedisConnectionFactory connectionFactory, String keyPrefix) {
        this(connectionFactory, keyPrefix, Set.of(), RedisThrottleStore.DEFAULT_TIMEOUT);
    }

    /**
     * Creates the shared bans on Spring Boot's Redis connection; the bans named in
     * {@code replicatedBans} ({@code durability: replicated}) are each followed by {@code WAIT 1}, on a
     * connection of their own, and stored again every second until a replica confirms one or it ends,
     * so that a failover cannot lose it.
     * @param connectionFactory the connection (standalone, Sentinel or Cluster; Lettuce's for
     * {@code replicatedBans})
     * @param keyPrefix the store's key prefix ({@code throttle.store.redis.key-prefix})
     * @param replicatedBans the names of the bans whose saves wait for a replica
     * @param timeout the store's timeout ({@code throttle.store.redis.timeout}): a replica has three
     * quarters of it to confirm a save
     */
    public RedisSharedBans(
            RedisConnectionFactory connectionFactory, String keyPrefix, Set<String> replicatedBans, Duration timeout) {
        this.replicatedBans = Set.copyOf(replicatedBans);
        this.replicated = replicatedBans.isEmpty()
                ? null
                : ReplicatedWrites.of(
                        connectionFactory, timeout, "bans " + String.join(", ", new TreeSet<>(replicatedBans)));
        this.redis = new StringRedisTemplate(connectionFactory);
        this.bans = "{" + keyPrefix + "}:bans";
        this.channel = keyPrefix + ":bans";
        this.connectionFactory = connectionFactory;
    }

    @Override
    public CompletionStage<Void> save(ActiveBan ban, long nowMillis) {
        ReplicatedWrites writes = this.replicated;
        if (writes != null && this.replicatedBans.contains(ban.ban())) {
            CompletableFuture<Void> confirmed = new CompletableFuture<>();
            saveReplicated(writes, ban, nowMillis, System.nanoTime(), confirmed, 0);
            return confirmed;
        }
        return run(() -> this.redis.execute(
                this.save,
                List.of(this.bans),
                member(ban.ban(), ban.key()),
                Long.toString(ban.until().toEpochMilli()),
                Long.toString(nowMillis),
                this.channel));
    }

    /**
     * Stores a ban, then {@code WAIT 1}; when no replica confirms it (a failover under way, the
     * master without a replica), stores it again a second later, until one does or the ban ends: the
     * save is idempotent, and whichever master takes it last keeps it. Completes when confirmed, or
     * exceptionally once the ban ended unconfirmed.
     */
    private void saveReplicated(
            ReplicatedWrites writes,
            ActiveBan ban,
            long nowMillis,
            long startedNanos,
            CompletableFuture<Void> confirmed,
            int tries) {
        long now = nowMillis + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedNanos);
        byte[][] args = {
            utf8(member(ban.ban(), ban.key())),
            utf8(Long.toString(ban.until().toEpochMilli())),
            utf8(Long.toString(now)),
            utf8(this.channel)
        };
        writes.eval(this.saveSha, SAVE_BYTES, utf8(this.bans), args).toFuture().whenComplete((reply, failure) -> {
            if (failure == null) {
                if (tries > 0) {
                    logger.info("Ban '" + ban.ban() + "' of key " + Bans.hashOf(ban.key())
                            + " is confirmed by a replica after " + tries + " more tries");
                }
                confirmed.complete(null);
                return;
            }
            long later = nowMillis + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedNanos);
            if (ban.until().toEpochMilli() <= later) {
                confirmed.completeExceptionally(failure);
                return;
            }
            if (tries == 0) {
                logger.warn("Ban '" + ban.ban() + "' of key " + Bans.hashOf(ban.key())
                        + " is not confirmed by a Redis replica (" + reason(failure)
                        + "); storing it again every second until one confirms it");
            }
            try {
                this.retries.schedule(
                        () -> saveReplicated(writes, ban, nowMillis, startedNanos, confirmed, tries + 1),
                        1,
                        TimeUnit.SECONDS);
            } catch (RejectedExecutionException ex) {
                confirmed.completeExceptionally(failure);
            }
        });
    }

    /** Redis's own reply where there is one ("NOTREPLICATED…"), else the failure's message. */
    private static String reason(Throwable failure) {
        String reply = RedisErrorReplies.message(failure);
        return (reply != null) ? reply : String.valueOf(failure.getMessage());
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public CompletionStage<Void> lift(String ban, String key) {
        return run(() -> this.redis.execute(this.lift, List.of(this.bans), member(ban, key), this.channel));
    }

    @Override
    public List<ActiveBan> loadAll(long nowMillis) {
        CompletableFuture<Set<ZSetOperations.TypedTuple<String>>> read = CompletableFuture.supplyAsync(
                () -> this.redis
                        .opsForZSet()
                        .rangeByScoreWithScores(this.bans, nowMillis + 1, Double.POSITIVE_INFINITY),
                this.calls);
        Set<ZSetOperations.TypedTuple<String>> members;
        try {
            members = read.get(RedisSharedPolicyChanges.BOUND.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException ex) {
            read.cancel(true);
            throw new IllegalStateException("Redis did not answer reading the bans", ex);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while reading the bans", ex);
        } catch (ExecutionException ex) {
            throw (ex.getCause() instanceof RuntimeException failure)
                    ? failure
                    : new IllegalStateException("Reading the bans failed", ex.getCause());
        }
        List<ActiveBan> active = new ArrayList<>();
        if (members != null) {
            for (ZSetOperations.TypedTuple<String> member : members) {
                ActiveBan ban = decode(member.getValue(), member.getScore());
                if (ban != null) {
                    active.add(ban);
                }
            }
        }
        return active;
    }

    @Override
    public void listen(Listener listener) {
        RedisSubscription subscription = new RedisSubscription(
                this.connectionFactory, this.channel, "throttle-bans", new Messages(listener, this.listening));
        this.subscription = subscription;
        subscription.start();
    }

    @Override
    public void close() {
        this.listening.shutdownNow();
        this.calls.shutdownNow();
        this.retries.shutdownNow();
        if (this.replicated != null) {
            this.replicated.close();
        }
        RedisSubscription subscription = this.subscription;
        if (subscription != null) {
            subscription.stop();
        }
    }

    private CompletionStage<Void> run(Runnable call) {
        try {
            return CompletableFuture.runAsync(call, this.calls);
        } catch (RejectedExecutionException ex) {
            return CompletableFuture.failedFuture(new IllegalStateException("The application is stopping", ex));
        }
    }

    private static String member(String ban, String key) {
        return ban + "\n" + key;
    }

    private static @Nullable ActiveBan decode(@Nullable String member, @Nullable Double until) {
        if (member == null || until == null) {
            return null;
        }
        int newline = member.indexOf('\n');
        if (newline <= 0) {
            return null;
        }
        return new ActiveBan(
                member.substring(0, newline), member.substring(newline + 1), Instant.ofEpochMilli(until.longValue()));
    }

    /** Hears the channel: {@code +<until>\n<ban>\n<key>}, {@code -\n<ban>\n<key>}, and a subscription made again. */
    private record Messages(Listener listener, Executor executor) implements MessageListener, SubscriptionListener {

        @Override
        public void onMessage(Message message, byte @Nullable [] pattern) {
            String text = new String(message.getBody(), StandardCharsets.UTF_8);
            int newline = text.indexOf('\n');
            if (newline < 1) {
                return;
            }
            String head = text.substring(0, newline);
            String member = text.substring(newline + 1);
            if (head.equals("-")) {
                int split = member.indexOf('\n');
                if (split > 0) {
                    run(() -> this.listener.lifted(member.substring(0, split), member.substring(split + 1)));
                }
                return;
            }
            try {
                ActiveBan ban = decode(member, Double.parseDouble(head.substring(1)));
                if (ban != null) {
                    run(() -> this.listener.started(ban));
                }
            } catch (NumberFormatException ex) {
                logger.debug("Ignoring a message on the bans channel that throttle cannot read");
            }
        }

        @Override
        public void onChannelSubscribed(byte[] channel, long count) {
            run(this.listener::reconnected);
        }

        private void run(Runnable task) {
            try {
                this.executor.execute(() -> {
                    try {
                        task.run();
                    } catch (RuntimeException ex) {
                        logger.warn("Applying the fleet's bans failed; the next reconnect reads them again", ex);
                    }
                });
            } catch (RejectedExecutionException ex) {
                // closed: the application is stopping
            }
        }
    }
}
