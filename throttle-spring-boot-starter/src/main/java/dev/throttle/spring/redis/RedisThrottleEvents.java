package dev.throttle.spring.redis;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;
import org.springframework.data.redis.connection.Message;
import org.springframework.data.redis.connection.MessageListener;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.SubscriptionListener;
import org.springframework.data.redis.listener.RedisMessageListenerContainer;

/**
 * The channel {@code <key-prefix>:events}, on which every instance tells the others what makes a
 * remembered refusal untrue: a key reset or given back ({@code k<sender> <length of policy>:<policy><key>}),
 * or a policy changed ({@code p<sender> <policy>}), where {@code <sender>} names the instance that
 * sent it, which has forgotten the key already and ignores its own message (heard later, it could
 * drop a refusal remembered since). Each instance listens with Spring Data Redis's
 * {@link RedisMessageListenerContainer} on the application's connection factory (standalone,
 * Sentinel or Cluster, where a {@code PUBLISH} reaches every node) and drops the entries named.
 *
 * <p>Messages are handled on the subscription's own thread (dropping an entry takes microseconds), so
 * no thread is started per message. Whenever the channel is subscribed (at start, and again after
 * the subscription was lost and recovered), every entry is dropped: events sent meanwhile were
 * missed. Thread-safe.
 */
final class RedisThrottleEvents implements MessageListener, SubscriptionListener {

    private final NearCache nearCache;

    /** The store's name in the messages it sends, {@link #newSender()}. */
    private final String sender;

    private final RedisSubscription subscription;

    private final CompletableFuture<Void> subscribed = new CompletableFuture<>();

    /** Told of every key another instance gave back ({@link dev.throttle.ThrottleStore#onGivenBack}). */
    private final List<BiConsumer<String, String>> givenBack = new CopyOnWriteArrayList<>();

    /** Whether the channel has been subscribed: until then no refusal is answered from the near cache. */
    private volatile boolean listening;

    RedisThrottleEvents(RedisConnectionFactory connectionFactory, String channel, NearCache nearCache, String sender) {
        this.nearCache = nearCache;
        this.sender = sender;
        this.subscription = new RedisSubscription(connectionFactory, channel, "throttle-redis-events", this);
    }

    /** Subscribes on a background thread: a Redis that is down at startup must not hold the start up. */
    void start() {
        this.subscription.start();
    }

    /** Completes once the channel is subscribed for the first time. */
    CompletableFuture<Void> subscribed() {
        return this.subscribed;
    }

    /** Stops listening, waiting at most {@link RedisSubscription#STOP_TIMEOUT}. */
    void stop() {
        // nothing is heard from here on: no refusal is answered from the near cache
        this.listening = false;
        this.subscription.stop();
    }

    @Override
    public void onChannelSubscribed(byte[] channel, long count) {
        this.nearCache.forgetAll();
        this.listening = true;
        this.subscribed.complete(null);
    }

    /**
     * Whether events are heard: the channel was subscribed (Lettuce subscribes again by itself after a
     * reconnect, and that subscription forgets everything, {@link #onChannelSubscribed}).
     */
    boolean isListening() {
        return this.listening;
    }

    @Override
    public void onMessage(Message message, byte @Nullable [] pattern) {
        String text = new String(message.getBody(), StandardCharsets.UTF_8);
        try {
            int space = text.indexOf(' ');
            if (text.startsWith(this.sender, 1) && space == 1 + this.sender.length()) {
                return;
            }
            if (text.startsWith("p")) {
                this.nearCache.forgetPolicy(text.substring(space + 1));
            } else if (text.startsWith("k")) {
                int colon = text.indexOf(':', space);
                int length = Integer.parseInt(text, space + 1, colon, 10);
                String policy = text.substring(colon + 1, colon + 1 + length);
                String key = text.substring(colon + 1 + length);
                // forgotten first, so that a waiter told of it asks Redis and not a refusal remembered
                this.nearCache.forget(policy, key);
                for (BiConsumer<String, String> listener : this.givenBack) {
                    listener.accept(policy, key);
                }
            }
        } catch (RuntimeException ex) {
            // not one of ours (another writer on the channel): nothing to drop, but drop everything to be safe
            this.nearCache.forgetAll();
        }
    }

    /** Tells {@code listener} of every key that another instance resets or gives back. */
    void onGivenBack(BiConsumer<String, String> listener) {
        this.givenBack.add(listener);
    }

    /** A new name for a store in the messages it sends. */
    static String newSender() {
        return UUID.randomUUID().toString().substring(0, 8);
    }

    /** The message that a key of a policy was reset or given back. */
    static ByteBuffer keyMessage(String sender, String policy, String key) {
        return ByteBuffer.wrap(
                ("k" + sender + " " + policy.length() + ":" + policy + key).getBytes(StandardCharsets.UTF_8));
    }

    /** The message that a policy changed. */
    static ByteBuffer policyMessage(String sender, String policy) {
        return ByteBuffer.wrap(("p" + sender + " " + policy).getBytes(StandardCharsets.UTF_8));
    }
}
