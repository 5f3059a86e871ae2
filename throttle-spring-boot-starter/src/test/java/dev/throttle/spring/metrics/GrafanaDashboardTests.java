package dev.throttle.spring.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import dev.throttle.testing.RepositoryFiles;
import dev.throttle.testing.redis.SharedRedis;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@code docs/grafana/throttle-dashboard.json} queries only what the starter ships: every metric
 * name in its PromQL, and every label its selectors use, is in a running application's
 * {@code /actuator/prometheus} after some decisions. Each store's own gauge is checked on that store.
 */
class GrafanaDashboardTests {

    private static final Pattern EXPR = Pattern.compile("\"expr\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");

    private static final Pattern METRIC = Pattern.compile("\\bthrottle_[a-z0-9_]+");

    /** A label in a selector: {@code outcome="rejected"}, {@code policy=~"$policy"}. */
    private static final Pattern LABEL = Pattern.compile("([a-z_]+)\\s*=~?\\s*\\\\\"");

    /** Gauges of one store only: the memory store's keys, the Redis store's near cache. */
    private static final Set<String> MEMORY_ONLY = Set.of("throttle_memory_keys");

    private static final Set<String> REDIS_ONLY = Set.of("throttle_near_cache_size");

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class DashboardApplication {}

    static Set<String> queried(Pattern pattern) throws IOException {
        String dashboard = Files.readString(RepositoryFiles.path("docs/grafana/throttle-dashboard.json"));
        Set<String> found = new TreeSet<>();
        Matcher expr = EXPR.matcher(dashboard);
        while (expr.find()) {
            Matcher matcher = pattern.matcher(expr.group(1));
            while (matcher.find()) {
                found.add(matcher.groupCount() > 0 ? matcher.group(1) : matcher.group());
            }
        }
        return found;
    }

    static String scrape(int port, Throttler throttler) throws Exception {
        // allowed and refused decisions, so that every outcome's series exists
        for (int i = 0; i < 3; i++) {
            throttler.tryAcquire("api", "alice");
        }
        HttpResponse<String> response = HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/actuator/prometheus"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).isEqualTo(200);
        return response.body();
    }

    static void assertQueriedMetricsExist(String scraped, Set<String> otherStoreOnly) throws IOException {
        Set<String> metrics = queried(METRIC);
        assertThat(metrics).contains("throttle_decisions_total", "throttle_store_latency_seconds_count");
        metrics.removeAll(otherStoreOnly);
        assertThat(metrics)
                .allSatisfy((metric) -> assertThat(scraped)
                        .as("/actuator/prometheus has %s", metric)
                        .containsPattern("(?m)^" + metric + "[{ ]"));
        // every label the selectors filter on is on the decisions counter
        String decisions = scraped.lines()
                .filter((line) -> line.startsWith("throttle_decisions_total{"))
                .findFirst()
                .orElseThrow();
        assertThat(queried(LABEL))
                .contains("policy", "outcome", "store", "mode", "near_cache")
                .allSatisfy((label) -> assertThat(decisions).contains(label + "=\""));
    }

    @Nested
    @SpringBootTest(
            classes = DashboardApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "management.endpoints.web.exposure.include=prometheus",
                "management.prometheus.metrics.export.enabled=true",
                "throttle.policies.api.algorithm=fixed-window",
                "throttle.policies.api.limit=2",
                "throttle.policies.api.window=1h",
                "throttle.policies.slots.algorithm=concurrency",
                "throttle.policies.slots.limit=2",
                "throttle.policies.slots.lease=1m"
            })
    class OnTheMemoryStore {

        @LocalServerPort
        int port;

        @Autowired
        Throttler throttler;

        @Test
        void everyMetricTheDashboardQueriesIsExported() throws Exception {
            assertQueriedMetricsExist(scrape(this.port, this.throttler), REDIS_ONLY);
        }
    }

    @Nested
    @SpringBootTest(
            classes = DashboardApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "management.endpoints.web.exposure.include=prometheus",
                "management.prometheus.metrics.export.enabled=true",
                "throttle.store.type=redis",
                "throttle.store.redis.timeout=2s",
                "throttle.policies.api.algorithm=fixed-window",
                "throttle.policies.api.limit=2",
                "throttle.policies.api.window=1h",
                "throttle.policies.slots.algorithm=concurrency",
                "throttle.policies.slots.limit=2",
                "throttle.policies.slots.lease=1m"
            })
    class OnTheRedisStore {

        @DynamicPropertySource
        static void redis(DynamicPropertyRegistry registry) {
            SharedRedis.flush();
            registry.add("spring.data.redis.url", () -> SharedRedis.endpoint().url());
        }

        @LocalServerPort
        int port;

        @Autowired
        Throttler throttler;

        @Test
        void everyMetricTheDashboardQueriesIsExported() throws Exception {
            assertQueriedMetricsExist(scrape(this.port, this.throttler), MEMORY_ONLY);
        }
    }
}
