package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.DecisionSource;
import dev.throttle.LockoutPolicy;
import dev.throttle.SourcedLimiter;
import dev.throttle.Throttler;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.testing.redis.RedisClusterProcesses;
import dev.throttle.testing.redis.SharedRedis;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The near cache's invalidation, through two running instances on one real Redis: a user locked out
 * and remembered as refused on instance B is let through on B once an operator unlocks them through
 * instance A's actuator endpoint. And the same events on a real three-node Redis Cluster. How soon
 * (the window's p99) is measured, not proven, by {@code NearCacheInvalidationLatencyTests} in
 * {@code benchmarks/} ({@code benchmarks/run.sh}).
 */
class RedisNearCacheInvalidationTests {

    private static final int UNLOCKS = 5;

    private static final HttpClient http = HttpClient.newHttpClient();

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class Instance {}

    private static ConfigurableApplicationContext start(String redisUrl) {
        return new SpringApplicationBuilder(Instance.class)
                .properties(
                        "server.port=0",
                        "spring.data.redis.url=" + redisUrl,
                        "throttle.store.type=redis",
                        "throttle.policies.login.algorithm=lockout",
                        "throttle.policies.login.timeouts=1h",
                        "management.endpoints.web.exposure.include=throttle",
                        "management.endpoint.throttle.access=unrestricted",
                        "spring.main.banner-mode=off")
                .run();
    }

    private static RedisThrottleStore redisStore(ConfigurableApplicationContext context) {
        return (RedisThrottleStore)
                context.getBean(ResilientThrottleStore.class).store();
    }

    @Test
    void anUnlockThroughTheActuatorOfOneInstanceLetsTheUserThroughOnAnother() throws Exception {
        SharedRedis.flush();
        String url = SharedRedis.endpoint().url();
        try (ConfigurableApplicationContext a = start(url);
                ConfigurableApplicationContext b = start(url)) {
            redisStore(b).eventsSubscribed().get(10, TimeUnit.SECONDS);
            int portA = Integer.parseInt(a.getEnvironment().getProperty("local.server.port"));
            Throttler onB = b.getBean(Throttler.class);
            SourcedLimiter limiterB =
                    (SourcedLimiter) b.getBean(ResilientThrottleStore.class).limiter(onB.policy("login"));
            for (int i = 0; i < UNLOCKS; i++) {
                String user = "user-" + i + "@example.com";
                assertThat(onB.tryAcquire("login", user).allowed()).isTrue();
                assertThat(onB.tryAcquire("login", user).allowed()).isFalse();
                assertThat(limiterB.tryAcquireSourced(user, 1).source())
                        .as("remembered on B")
                        .isEqualTo(DecisionSource.nearCache("redis"));
                HttpResponse<String> unlock = http.send(
                        HttpRequest.newBuilder(
                                        URI.create("http://localhost:" + portA + "/actuator/throttle/login/" + user))
                                .DELETE()
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(unlock.statusCode()).isEqualTo(200);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                while (!onB.tryAcquire("login", user).allowed()) {
                    assertThat(System.nanoTime())
                            .as("let through on B within 5 s")
                            .isLessThan(deadline);
                    LockSupport.parkNanos(50_000);
                }
            }
        }
    }

    @Test
    void eventsReachEveryInstanceOnACluster() throws Exception {
        RedisClusterProcesses cluster = RedisClusterProcesses.shared();
        cluster.flushAll();
        LettuceConnectionFactory factoryA = cluster.newConnectionFactory();
        LettuceConnectionFactory factoryB = cluster.newConnectionFactory();
        NearCacheSettings settings = NearCacheSettings.of(1000, Duration.ofMillis(50));
        try (RedisThrottleStore a =
                        new RedisThrottleStore(factoryA, "throttle", Duration.ofSeconds(2), null, settings);
                RedisThrottleStore b =
                        new RedisThrottleStore(factoryB, "throttle", Duration.ofSeconds(2), null, settings)) {
            b.eventsSubscribed().get(10, TimeUnit.SECONDS);
            LockoutPolicy policy = LockoutPolicy.of("login", List.of(Duration.ofHours(1)));
            SourcedLimiter onA = (SourcedLimiter) a.limiter(policy);
            SourcedLimiter onB = (SourcedLimiter) b.limiter(policy);
            for (int i = 0; i < 30; i++) {
                // keys spread over the three masters' slots
                String user = "user-" + i;
                assertThat(onB.tryAcquire(user, 1).allowed()).isTrue();
                assertThat(onB.tryAcquire(user, 1).allowed()).isFalse();
                assertThat(onB.tryAcquireSourced(user, 1).source()).isEqualTo(DecisionSource.nearCache("redis"));
                onA.reset(user);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                while (!onB.tryAcquire(user, 1).allowed()) {
                    assertThat(System.nanoTime())
                            .as("let through on B within 5 s")
                            .isLessThan(deadline);
                    LockSupport.parkNanos(50_000);
                }
            }
            // a policy bound again on A with other numbers is forgotten on B too
            assertThat(onB.tryAcquire("zoe", 1).allowed()).isTrue();
            onB.tryAcquire("zoe", 1);
            assertThat(b.nearCacheSize()).isPositive();
            a.limiter(LockoutPolicy.of("login", List.of(Duration.ofHours(2))));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (b.nearCacheSize() > 0 && System.nanoTime() < deadline) {
                LockSupport.parkNanos(100_000);
            }
            assertThat(b.nearCacheSize()).as("policy change heard on B").isZero();
        } finally {
            factoryA.destroy();
            factoryB.destroy();
        }
    }
}
