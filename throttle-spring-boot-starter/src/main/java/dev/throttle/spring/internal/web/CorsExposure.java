package dev.throttle.spring.internal.web;

import dev.throttle.spring.web.RateLimitHeaders;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpHeaders;
import org.springframework.web.cors.CorsConfiguration;

/**
 * Lets cross-origin scripts read {@code Retry-After}, {@code RateLimit} and {@code RateLimit-Policy}:
 * adds them to the exposed headers of the application's CORS configurations. Never allows an origin
 * the application does not.
 */
public final class CorsExposure {

    /** The headers a script needs to see to wait as told. */
    public static final List<String> HEADERS =
            List.of(HttpHeaders.RETRY_AFTER, RateLimitHeaders.LIMIT, RateLimitHeaders.POLICY);

    private CorsExposure() {}

    /**
     * Returns a configuration that also exposes the rate-limit headers.
     * @param config a configuration, or null
     * @return the same configuration when it already exposes them (or is null), else a copy that does
     */
    public static @Nullable CorsConfiguration exposing(@Nullable CorsConfiguration config) {
        if (config == null || exposes(config)) {
            return config;
        }
        CorsConfiguration copy = new CorsConfiguration(config);
        HEADERS.forEach(copy::addExposedHeader);
        return copy;
    }

    /**
     * Adds the rate-limit headers to a configuration's exposed headers, in place.
     * @param config the configuration
     */
    public static void expose(CorsConfiguration config) {
        if (!exposes(config)) {
            HEADERS.forEach(config::addExposedHeader);
        }
    }

    private static boolean exposes(CorsConfiguration config) {
        List<String> exposed = config.getExposedHeaders();
        return exposed != null
                && HEADERS.stream().allMatch((name) -> exposed.stream().anyMatch(name::equalsIgnoreCase));
    }
}
