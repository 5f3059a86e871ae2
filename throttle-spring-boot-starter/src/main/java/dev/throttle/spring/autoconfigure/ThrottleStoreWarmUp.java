package dev.throttle.spring.autoconfigure;

import dev.throttle.Throttler;
import dev.throttle.resilience.ResilientThrottleStore;
import java.time.Duration;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;

/**
 * Warms up the store's decision path for every policy once all singletons exist, so before the web
 * server accepts its first request (and before the readiness probe says ready): the first Redis
 * calls of a cold JVM can take longer than the store's timeout, which would turn the store to its
 * failure mode in the first burst after a start and let every instance grant its own quota. See
 * {@link ResilientThrottleStore#warmUp}.
 *
 * <p>Bounded by {@link #BOUND}, at startup only. A Redis that has not answered by then, or that
 * refuses, is no startup failure: the store logs one WARN and the failure mode answers until Redis
 * answers again.
 */
final class ThrottleStoreWarmUp implements SmartInitializingSingleton {

    /** The longest the warm-up keeps the application from starting. */
    static final Duration BOUND = Duration.ofSeconds(10);

    private static final Log logger = LogFactory.getLog(ThrottleStoreWarmUp.class);

    private final ObjectProvider<Throttler> throttler;

    ThrottleStoreWarmUp(ObjectProvider<Throttler> throttler) {
        this.throttler = throttler;
    }

    @Override
    public void afterSingletonsInstantiated() {
        Throttler throttler = this.throttler.getIfUnique();
        if (throttler == null || !(throttler.store() instanceof ResilientThrottleStore store)) {
            return;
        }
        long start = System.nanoTime();
        boolean warm = store.warmUp(throttler.policies().values(), BOUND);
        if (warm && logger.isDebugEnabled()) {
            logger.debug("Throttle store '" + store.kind() + "' warmed up for "
                    + throttler.policies().size() + " policies in "
                    + Duration.ofNanos(System.nanoTime() - start).toMillis() + " ms");
        }
    }
}
