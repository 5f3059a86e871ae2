package dev.throttle.testing.redis;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * The one standalone Redis that the tests of this JVM share.
 *
 * <p>{@code REDIS_URL} (for example {@code redis://localhost:6379}) when set; otherwise a Redis
 * 7.0.15 from {@code org.signal:embedded-redis}, started on a free port at first use and stopped by
 * a shutdown hook. So {@code ./mvnw verify} needs nothing but a JDK.
 *
 * <p>Use {@link #endpoint()} anywhere, or annotate a test class with {@link WithRedis}: the
 * extension flushes the database before each test and injects {@link RedisEndpoint} parameters.
 * Thread-safe.
 */
public final class SharedRedis {

    /** The environment variable naming an external Redis to use instead of an embedded one. */
    public static final String REDIS_URL = "REDIS_URL";

    private SharedRedis() {}

    /**
     * Returns the shared Redis, starting it on first use.
     * @return where it answers
     */
    public static RedisEndpoint endpoint() {
        return Holder.ENDPOINT;
    }

    /**
     * Returns whether the shared Redis is external ({@code REDIS_URL}) rather than embedded.
     * @return whether {@code REDIS_URL} is set
     */
    public static boolean isExternal() {
        return externalUrl() != null;
    }

    /**
     * Runs {@code FLUSHALL} on the shared Redis.
     */
    public static void flush() {
        endpoint().flushAll();
    }

    private static String externalUrl() {
        String url = System.getenv(REDIS_URL);
        return (url != null && !url.isBlank()) ? url.trim() : null;
    }

    private static final class Holder {

        static final RedisEndpoint ENDPOINT = start();

        private static RedisEndpoint start() {
            String url = externalUrl();
            if (url != null) {
                return RedisEndpoint.parse(url);
            }
            RedisProcess redis = RedisProcess.startStandalone();
            Runtime.getRuntime().addShutdownHook(new Thread(redis::stop, "shared-redis-stop"));
            return redis.endpoint();
        }
    }

    /**
     * Gives a test class the shared Redis: flushed before each test, injectable as a
     * {@link RedisEndpoint} parameter.
     */
    @Target(ElementType.TYPE)
    @Retention(RetentionPolicy.RUNTIME)
    @Documented
    @ExtendWith(Extension.class)
    public @interface WithRedis {}

    /**
     * The JUnit 5 extension behind {@link WithRedis}.
     */
    public static final class Extension implements BeforeEachCallback, ParameterResolver {

        @Override
        public void beforeEach(ExtensionContext context) {
            flush();
        }

        @Override
        public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
            return parameter.getParameter().getType() == RedisEndpoint.class;
        }

        @Override
        public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
            return endpoint();
        }
    }
}
