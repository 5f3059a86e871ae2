package dev.throttle.spring.redis;

import dev.throttle.spring.fleet.SharedPolicyChanges;
import dev.throttle.spring.fleet.StoredPolicyChange;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.QueryTimeoutException;
import org.springframework.data.redis.connection.Message;
import org.springframework.data.redis.connection.MessageListener;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.SubscriptionListener;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.data.redis.core.script.DefaultRedisScript;

/**
 * The fleet's policy changes in Redis: one hash, {@code {<key-prefix>}:policy-changes}, holds each
 * changed policy's latest change, and a counter beside it numbers them; one script takes the next
 * number, stores the change with Redis's time and publishes the policy's name on
 * {@code <key-prefix>:policy-changes}, so that a change is numbered, stored and announced at once. The
 * braces keep both keys in one slot of a Redis Cluster; neither has an expiry (they are the
 * configuration of the fleet, a few hundred bytes). An instance that missed messages (the
 * subscription was lost) is told to read every change again when it is subscribed again. Thread-safe.
 */
public final class RedisSharedPolicyChanges implements SharedPolicyChanges {

    private static final Log logger = LogFactory.getLog(RedisSharedPolicyChanges.class);

    private static final String SAVE = """
            local version = redis.call('INCR', KEYS[2])
            local time = redis.call('TIME')
            local millis = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
            redis.call('HSET', KEYS[1], ARGV[1], version .. '\\n' .. millis .. '\\n' .. ARGV[2])
            redis.call('PUBLISH', ARGV[3], ARGV[1])
            return {version, millis}
            """;

    private static final String REVERT = "-";

    /**
     * The longest a save or a read waits for Redis: these calls are an operator's change and a start,
     * never a decision, but a Redis that stopped answering must not hold either for the client's own
     * command timeout (a minute by default).
     */
    static final Duration BOUND = Duration.ofSeconds(5);

    private final StringRedisTemplate redis;

    private final DefaultRedisScript<List> save = new DefaultRedisScript<>(SAVE, List.class);

    private final String hash;

    private final String counter;

    private final String channel;

    private final RedisConnectionFactory connectionFactory;

    /** The subscription to the channel, once {@link #listen} was called. */
    private volatile @Nullable RedisSubscription subscription;

    /**
     * Runs what the listener does with a message, one at a time and in order, off the subscription's
     * thread (a client's I/O thread, which must never wait for another Redis answer).
     */
    private final ExecutorService listening = Executors.newSingleThreadExecutor((task) -> {
        Thread thread = new Thread(task, "throttle-policy-changes");
        thread.setDaemon(true);
        return thread;
    });

    /** Runs saves and reads, so that the caller waits at most {@link #BOUND}. */
    private final ExecutorService calls = Executors.newCachedThreadPool((task) -> {
        Thread thread = new Thread(task, "throttle-policy-changes-call");
        thread.setDaemon(true);
        return thread;
    });

    /**
     * Creates the shared changes on Spring Boot's Redis connection.
     * @param connectionFactory the connection (standalone, Sentinel or Cluster)
     * @param keyPrefix the store's key prefix ({@code throttle.store.redis.key-prefix})
     */
    public RedisSharedPolicyChanges(RedisConnectionFactory connectionFactory, String keyPrefix) {
        this.redis = new StringRedisTemplate(connectionFactory);
        this.hash = "{" + keyPrefix + "}:policy-changes";
        this.counter = this.hash + ":version";
        this.channel = keyPrefix + ":policy-changes";
        this.connectionFactory = connectionFactory;
    }

    @Override
    public StoredPolicyChange save(String policy, @Nullable Map<String, String> settings, String by) {
        String body = line(by) + "\n" + ((settings == null) ? REVERT : encode(settings));
        List<?> stored = bounded(
                "storing the change of policy '" + policy + "'",
                () -> this.redis.execute(this.save, List.of(this.hash, this.counter), policy, body, this.channel));
        if (stored == null || stored.size() != 2) {
            throw new IllegalStateException("Redis did not store the change of policy '" + policy + "'");
        }
        return new StoredPolicyChange(
                policy,
                ((Number) stored.get(0)).longValue(),
                (settings != null) ? Map.copyOf(settings) : null,
                line(by),
                Instant.ofEpochMilli(((Number) stored.get(1)).longValue()));
    }

    @Override
    public List<StoredPolicyChange> loadAll() {
        Map<Object, Object> entries = bounded(
                "reading the fleet's policy changes",
                () -> this.redis.opsForHash().entries(this.hash));
        List<StoredPolicyChange> changes = new ArrayList<>(entries.size());
        entries.forEach((policy, value) -> {
            StoredPolicyChange change = decode(policy.toString(), value.toString());
            if (change != null) {
                changes.add(change);
            }
        });
        return changes;
    }

    @Override
    public void listen(Listener listener) {
        RedisSubscription subscription = new RedisSubscription(
                this.connectionFactory,
                this.channel,
                "throttle-policy-changes",
                new Messages(listener, this.listening));
        this.subscription = subscription;
        subscription.start();
    }

    @Override
    public void close() {
        this.listening.shutdownNow();
        this.calls.shutdownNow();
        RedisSubscription subscription = this.subscription;
        if (subscription != null) {
            subscription.stop();
        }
    }

    private <T> T bounded(String what, Supplier<T> call) {
        CompletableFuture<T> answer = CompletableFuture.supplyAsync(call, this.calls);
        try {
            return answer.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException ex) {
            answer.cancel(true);
            throw new IllegalStateException("Redis did not answer " + what + " within " + BOUND.toSeconds() + " s", ex);
        } catch (InterruptedException ex) {
            answer.cancel(true);
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while " + what, ex);
        } catch (ExecutionException ex) {
            if (ex.getCause() instanceof QueryTimeoutException timedOut) {
                // The client's own command timeout may fire first: the same silence, told the same way.
                throw new IllegalStateException("Redis did not answer " + what, timedOut);
            }
            String refusal = RedisErrorReplies.message(ex.getCause());
            if (refusal != null) {
                // Spring's translation of Lettuce's error says only "Error in execution": the operator is
                // told Redis's own words instead ("TRYAGAIN Multiple keys request during rehashing of
                // slot" while a Cluster moves the slot of the changes' hash and counter, "READONLY…")
                throw new IllegalStateException("Redis refused " + what + ": " + refusal, ex.getCause());
            }
            throw (ex.getCause() instanceof RuntimeException failure)
                    ? failure
                    : new IllegalStateException(what + " failed", ex.getCause());
        }
    }

    /** Settings as lines of {@code name=value}; a value holds no line break (YAML values of a policy never do). */
    private static String encode(Map<String, String> settings) {
        StringBuilder text = new StringBuilder();
        settings.forEach((name, value) -> {
            if (name.indexOf('=') >= 0 || name.indexOf('\n') >= 0 || value.indexOf('\n') >= 0) {
                throw new IllegalArgumentException(
                        "A policy setting cannot hold '=' in its name or a line break: " + name);
            }
            text.append(name).append('=').append(value).append('\n');
        });
        return text.toString();
    }

    /** A stored change, or null (logged once per read) when another writer left something else under the hash. */
    private static @Nullable StoredPolicyChange decode(String policy, String stored) {
        String[] lines = stored.split("\n", -1);
        try {
            long version = Long.parseLong(lines[0]);
            Instant at = Instant.ofEpochMilli(Long.parseLong(lines[1]));
            String by = lines[2];
            if (lines.length > 3 && REVERT.equals(lines[3])) {
                return new StoredPolicyChange(policy, version, null, by, at);
            }
            Map<String, String> settings = new LinkedHashMap<>();
            for (int i = 3; i < lines.length; i++) {
                int equals = lines[i].indexOf('=');
                if (equals > 0) {
                    settings.put(lines[i].substring(0, equals), lines[i].substring(equals + 1));
                }
            }
            return new StoredPolicyChange(policy, version, settings, by, at);
        } catch (RuntimeException ex) {
            logger.warn("Ignoring a stored change of policy '" + policy + "' that throttle cannot read");
            return null;
        }
    }

    private static String line(String text) {
        return text.replace('\n', ' ');
    }

    /** Hears the channel: a policy's name, and the subscription made again after it was lost. */
    private record Messages(Listener listener, Executor executor) implements MessageListener, SubscriptionListener {

        @Override
        public void onMessage(Message message, byte @Nullable [] pattern) {
            String policy = new String(message.getBody(), StandardCharsets.UTF_8);
            run(() -> this.listener.changed(policy));
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
                        logger.warn(
                                "Applying the fleet's policy changes failed; the next change or reconnect "
                                        + "reads them again",
                                ex);
                    }
                });
            } catch (RejectedExecutionException ex) {
                // closed: the application is stopping
            }
        }
    }
}
