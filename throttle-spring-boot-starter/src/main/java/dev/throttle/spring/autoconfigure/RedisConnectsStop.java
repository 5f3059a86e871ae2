package dev.throttle.spring.autoconfigure;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.context.ApplicationListener;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.event.ContextClosedEvent;

/**
 * Stops throttle's connects to Redis (the store's, and the subscriptions and calls of the fleet's
 * bans and policy changes) when the application stops, after the web server (no request is decided
 * any more) and before Spring Data Redis's connection factory, whose phase is 0. A connect to a Redis
 * that takes connections but never answers holds the factory's lock for the client's timeout (a
 * minute by default), and each of these retries; the factory takes the same lock to stop, so without
 * this the application's shutdown waited minutes for a Redis that had stopped answering. Only a
 * closing application is stopped so: a context stopped to be started again keeps them. Each bean
 * that connects adds its stop here as it is made, so that stopping never makes a bean.
 */
final class RedisConnectsStop
        implements SmartLifecycle, ApplicationListener<ContextClosedEvent>, ApplicationContextAware {

    /** Above the connection factory's 0, below the web server's graceful shutdown. */
    static final int PHASE = 1;

    private final List<Runnable> stops = new CopyOnWriteArrayList<>();

    private volatile boolean running;

    /** Set when this application closes; a context only stopped (to be started again) keeps its connects. */
    private volatile boolean closing;

    private @Nullable ApplicationContext context;

    /** Adds what stops one bean's connects; run once, when the application stops. */
    void add(Runnable stop) {
        this.stops.add(stop);
    }

    @Override
    public void setApplicationContext(ApplicationContext context) {
        this.context = context;
    }

    @Override
    public void onApplicationEvent(ContextClosedEvent event) {
        // a child context (the management server's) closing tells its parent too
        if (event.getApplicationContext() == this.context) {
            this.closing = true;
        }
    }

    @Override
    public void start() {
        this.running = true;
    }

    @Override
    public void stop() {
        this.running = false;
        if (!this.closing) {
            return;
        }
        for (Runnable stop : this.stops) {
            stop.run();
        }
    }

    @Override
    public boolean isRunning() {
        return this.running;
    }

    @Override
    public int getPhase() {
        return PHASE;
    }
}
