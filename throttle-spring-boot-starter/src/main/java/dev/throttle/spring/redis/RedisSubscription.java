package dev.throttle.spring.redis;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.data.redis.connection.MessageListener;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.listener.ChannelTopic;
import org.springframework.data.redis.listener.RedisMessageListenerContainer;

/**
 * One channel heard through Spring Data Redis's {@link RedisMessageListenerContainer}, started and
 * stopped so that a Redis that does not answer holds neither the application's start nor its
 * shutdown: the container subscribes on a daemon thread of its own (and keeps trying with its
 * back-off), and stopping waits at most {@link #STOP_TIMEOUT}, since the container's {@code destroy}
 * waits for a subscription still being made, up to the client's command timeout (a minute by
 * default). Messages are handled on the subscription's own thread: a listener that does more than
 * drop an entry hands the work to a thread of its own.
 */
final class RedisSubscription {

    private static final Log logger = LogFactory.getLog(RedisSubscription.class);

    /** The longest {@link #stop} waits for the subscription to stop. */
    static final Duration STOP_TIMEOUT = Duration.ofSeconds(5);

    private final String channel;

    private final String name;

    private final RedisMessageListenerContainer container;

    /** The thread that subscribes, until it is done. */
    private volatile @Nullable Thread subscribing;

    private final AtomicBoolean stopped = new AtomicBoolean();

    /**
     * Prepares the subscription; nothing is sent before {@link #start}.
     * @param connectionFactory the connection (standalone, Sentinel or Cluster)
     * @param channel the channel
     * @param name the name of the container and of its threads
     * @param listener hears the channel's messages, and, when it is a
     * {@link org.springframework.data.redis.connection.SubscriptionListener}, each time the channel is
     * subscribed (again after a lost subscription was recovered)
     */
    RedisSubscription(RedisConnectionFactory connectionFactory, String channel, String name, MessageListener listener) {
        this.channel = channel;
        this.name = name;
        this.container = new RedisMessageListenerContainer();
        this.container.setConnectionFactory(connectionFactory);
        this.container.setTaskExecutor(Runnable::run);
        this.container.setBeanName(name);
        this.container.addMessageListener(listener, new ChannelTopic(channel));
        this.container.afterPropertiesSet();
    }

    /** Subscribes on a daemon thread: a Redis that is down at startup must not hold the start up. */
    void start() {
        Thread thread = new Thread(
                () -> {
                    try {
                        this.container.start();
                    } catch (RuntimeException ex) {
                        // the container keeps trying on its own, with its back-off
                        logger.debug("Subscription to " + this.channel + " not made yet", ex);
                    } finally {
                        this.subscribing = null;
                    }
                },
                this.name);
        thread.setDaemon(true);
        this.subscribing = thread;
        thread.start();
    }

    /**
     * Stops listening, waiting at most {@link #STOP_TIMEOUT}; past it the container finishes stopping
     * on its own daemon thread, and the application's shutdown goes on. A subscription still being
     * made is given up (its thread interrupted): its connect to a Redis that does not answer would hold
     * the connection factory's lock, which the factory takes to stop. Called again, does nothing.
     */
    void stop() {
        if (!this.stopped.compareAndSet(false, true)) {
            return;
        }
        Thread thread = this.subscribing;
        if (thread != null) {
            thread.interrupt();
        }
        Thread stopping = new Thread(
                () -> {
                    try {
                        this.container.destroy();
                    } catch (Exception ex) {
                        logger.debug("Stopping the subscription to " + this.channel + " failed", ex);
                    }
                },
                this.name + "-stop");
        stopping.setDaemon(true);
        stopping.start();
        try {
            stopping.join(STOP_TIMEOUT.toMillis());
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
        if (stopping.isAlive()) {
            logger.debug("The subscription to " + this.channel + " did not stop within " + STOP_TIMEOUT
                    + "; it stops on its own thread");
        }
    }
}
