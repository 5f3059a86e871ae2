package dev.throttle.spring.redis;

import java.time.Duration;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.data.redis.connection.ReactiveRedisConnection;

/**
 * Reads Redis's {@code maxmemory-policy} and warns when Redis may evict the store's keys. Every
 * throttle key has a TTL, so every policy but {@code noeviction} can evict one under memory
 * pressure ({@code allkeys-*} any key, {@code volatile-*} any key with a TTL): an evicted lockout
 * lets a locked-out user guess again, an evicted counter admits more than the limit. Run when the
 * store connects, and again when it connects after an outage (Redis may have been replaced by one
 * configured otherwise). Each finding is logged once, not at every reconnect; a Redis that refuses
 * {@code CONFIG} (most managed services do) is said once to be unchecked.
 */
final class MemoryPolicyCheck {

    private static final Log logger = LogFactory.getLog(RedisThrottleStore.class);

    private static final String POLICY = "maxmemory-policy";

    /** The last finding logged, so that a reconnect to the same Redis says nothing new. */
    private final AtomicReference<String> reported = new AtomicReference<>();

    /**
     * Reads the policy on {@code connection} and logs what it finds, if it differs from the last
     * finding. Never throws; waits at most {@code bound}.
     * @param connection the store's connection
     * @param bound the longest to wait for Redis
     */
    void check(ReactiveRedisConnection connection, Duration bound) {
        String finding;
        try {
            Properties config = connection.serverCommands().getConfig(POLICY).block(bound);
            finding = finding(config);
        } catch (RuntimeException ex) {
            if (isTimeoutOrConnection(ex)) {
                return; // an outage, not an answer: the next connect checks again
            }
            finding = "unchecked:" + innermostMessage(ex);
        }
        if (finding == null || finding.equals(this.reported.getAndSet(finding))) {
            return;
        }
        if (finding.startsWith("unchecked:")) {
            logger.info("Could not read Redis's maxmemory-policy (" + finding.substring("unchecked:".length())
                    + "); make sure it is noeviction, or that this Redis is not shared with a cache: a Redis that "
                    + "evicts throttle's keys forgets lockouts and counts");
        } else if (!finding.equals("noeviction")) {
            logger.warn("Redis's maxmemory-policy is " + finding + ": under memory pressure Redis evicts keys, "
                    + "throttle's included (each has a TTL), which forgets lockouts and counts, so a locked-out user "
                    + "may guess again and a limit may admit more than it says.\n\nAction:\n\nSet maxmemory-policy to "
                    + "noeviction on this Redis (CONFIG SET maxmemory-policy noeviction, or in redis.conf), or give "
                    + "throttle a Redis of its own that does not evict.");
        }
    }

    /**
     * The policy, or the distinct policies of a Cluster's nodes joined by commas (a Cluster answers
     * one entry per node, named after the node); null when Redis answered nothing of it.
     */
    static String finding(Properties config) {
        if (config == null) {
            return null;
        }
        TreeSet<String> policies = new TreeSet<>();
        for (String name : config.stringPropertyNames()) {
            if (name.equals(POLICY) || name.endsWith("." + POLICY)) {
                policies.add(config.getProperty(name).trim().toLowerCase(java.util.Locale.ROOT));
            }
        }
        if (policies.isEmpty()) {
            return null;
        }
        if (policies.size() > 1) {
            policies.remove("noeviction");
        }
        return String.join(",", policies);
    }

    private static boolean isTimeoutOrConnection(Throwable ex) {
        for (Throwable cause = ex; cause != null; cause = cause.getCause()) {
            String name = cause.getClass().getName();
            if (cause instanceof java.util.concurrent.TimeoutException
                    || cause instanceof java.io.IOException
                    || name.contains("Timeout")
                    || name.contains("Connection")) {
                return true;
            }
        }
        return ex.getMessage() != null && ex.getMessage().startsWith("Timeout on blocking read");
    }

    private static String innermostMessage(Throwable ex) {
        Throwable innermost = ex;
        while (innermost.getCause() != null && innermost.getCause() != innermost) {
            innermost = innermost.getCause();
        }
        String message = innermost.getMessage();
        return (message != null) ? message : innermost.getClass().getSimpleName();
    }
}
