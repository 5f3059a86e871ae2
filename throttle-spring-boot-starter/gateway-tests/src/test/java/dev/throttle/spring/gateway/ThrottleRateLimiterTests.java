package dev.throttle.spring.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.throttle.ConcurrencyPolicy;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.admission.Charge;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.cloud.gateway.event.FilterArgsEvent;
import org.springframework.cloud.gateway.filter.ratelimit.RateLimiter;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * The RateLimiter alone, with routes configured in Java: a route's mistakes are told with the route
 * and the argument to fix, a route of the gateway's own Redis limiter is handed to it, a call given a
 * later turn waits for it, and {@code throttle.http.headers: none} leaves the headers out.
 */
class ThrottleRateLimiterTests {

    private final Admissions admissions = Admissions.of(new Throttler(
            new MemoryThrottleStore(TimeSource.system(), 1000),
            List.of(new FixedWindowPolicy("api", 1, Duration.ofHours(1)))));

    private ThrottleRateLimiter limiter(boolean headers) {
        return new ThrottleRateLimiter(this.admissions, headers, null);
    }

    @Test
    void aRouteWithoutAPolicyIsToldWhichArgumentToAdd() {
        ThrottleRateLimiter limiter = limiter(true);
        assertThatThrownBy(() -> limiter.isAllowed("orders", "alice").block())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'orders'")
                .hasMessageContaining("throttle.policy");
    }

    @Test
    void aRouteNamingAnUnknownPolicyOrPlanIsToldSo() {
        ThrottleRateLimiter limiter = limiter(true);
        limiter.getConfig().put("orders", new ThrottleRateLimiter.Config().setPolicy("nope"));
        assertThatThrownBy(() -> limiter.isAllowed("orders", "alice").block())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'orders'")
                .hasMessageContaining("nope");
        limiter.getConfig()
                .put(
                        "partners",
                        new ThrottleRateLimiter.Config().setPolicy("api").setPlan("gold"));
        assertThatThrownBy(() -> limiter.isAllowed("partners", "alice").block())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'partners'")
                .hasMessageContaining("throttle.plan 'gold'");
    }

    @Test
    void aConcurrencyPolicyIsRefusedForARouteWhichNeverLearnsWhenItsCallEnds() {
        ThrottleRateLimiter limiter = new ThrottleRateLimiter(
                Admissions.of(new Throttler(
                        new MemoryThrottleStore(TimeSource.system(), 1000),
                        List.of(new ConcurrencyPolicy("exports", 2, Duration.ofSeconds(30))))),
                true,
                null);
        limiter.getConfig().put("exports", new ThrottleRateLimiter.Config().setPolicy("exports"));
        assertThatThrownBy(() -> limiter.isAllowed("exports", "alice").block())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'exports'")
                .hasMessageContaining("concurrency policy")
                .hasMessageContaining("@Throttled");
    }

    @Test
    void aCostThePolicyCannotGrantIsRefusedForTheRoute() {
        ThrottleRateLimiter limiter = limiter(true);
        limiter.getConfig()
                .put("orders", new ThrottleRateLimiter.Config().setPolicy("api").setCost(2));
        assertThatThrownBy(() -> limiter.isAllowed("orders", "alice").block())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'orders'")
                .hasMessageContaining("throttle.cost is 2")
                .hasMessageContaining("from 1 to 1");
    }

    @Test
    void anArgumentThatIsNotThrottlesFailsTheBindingOfTheRoute() {
        ThrottleRateLimiter limiter = limiter(true);
        assertThatThrownBy(() -> limiter.onApplicationEvent(
                        new FilterArgsEvent(this, "orders", Map.of("throttle.policy", "api", "throttle.cots", "4"))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'orders'")
                .hasMessageContaining("'throttle.cots'")
                .hasMessageContaining("throttle.cost");
    }

    @Test
    void aRouteWithOnlyTheGatewaysRedisArgumentsIsHandedToItsRedisRateLimiterOrFailsWithoutOne() {
        RateLimiter<Object> redis = new RateLimiter<>() {

            @Override
            public Mono<Response> isAllowed(String routeId, String id) {
                return Mono.just(new Response(false, Map.of("X-Handed-To", routeId + ":" + id)));
            }

            @Override
            public Map<String, Object> getConfig() {
                return Map.of();
            }

            @Override
            public Class<Object> getConfigClass() {
                return Object.class;
            }

            @Override
            public Object newConfig() {
                return new Object();
            }
        };
        FilterArgsEvent legacy = new FilterArgsEvent(
                this, "legacy", Map.of("redis-rate-limiter.replenishRate", "1", "key-resolver", "#{@keys}"));
        ThrottleRateLimiter limiter = new ThrottleRateLimiter(this.admissions, true, null, () -> redis);
        limiter.onApplicationEvent(legacy);
        assertThat(limiter.isAllowed("legacy", "alice").block().getHeaders())
                .containsEntry("X-Handed-To", "legacy:alice");
        assertThatThrownBy(() -> limiter(true).onApplicationEvent(legacy))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'legacy'")
                .hasMessageContaining("redis-rate-limiter")
                .hasMessageContaining("throttle.policy");
    }

    @Test
    void aCallGivenALaterTurnGivesItBackWhenItsClientLeavesBeforeIt() {
        // the store's clock stands still: the turn given back is read from the key's state, not timed
        Throttler throttler = new Throttler(
                new MemoryThrottleStore(new ManualTimeSource(), 1000),
                List.of(new GcraPolicy("paced", 1, Duration.ofSeconds(1))));
        Admissions waiting = new Admissions(
                throttler, (name) -> Charge.OnSuccess.COUNT, (name) -> () -> false, (name) -> Duration.ofSeconds(5));
        ThrottleRateLimiter limiter = new ThrottleRateLimiter(waiting, true, null);
        limiter.getConfig().put("paced", new ThrottleRateLimiter.Config().setPolicy("paced"));
        assertThat(limiter.isAllowed("paced", "alice").block().isAllowed()).isTrue();
        // the second call's turn is a second away; its client leaves before it
        Disposable left = limiter.isAllowed("paced", "alice").subscribe();
        assertThat(throttler.peek("paced", "alice").retryAfterMillis())
                .as("while it waits, the next turn is the one after it")
                .isEqualTo(2_000);
        left.dispose();
        assertThat(throttler.peek("paced", "alice").retryAfterMillis())
                .as("its turn is given back: the next call gets it")
                .isEqualTo(1_000);
    }

    @Test
    void withHeadersOffOnlyARefusalsRetryAfterIsSent() {
        ThrottleRateLimiter limiter = limiter(false);
        limiter.getConfig().put("orders", new ThrottleRateLimiter.Config().setPolicy("api"));
        RateLimiter.Response allowed = limiter.isAllowed("orders", "alice").block();
        assertThat(allowed.isAllowed()).isTrue();
        assertThat(allowed.getHeaders()).isEmpty();
        RateLimiter.Response refused = limiter.isAllowed("orders", "alice").block();
        assertThat(refused.isAllowed()).isFalse();
        assertThat(refused.getHeaders()).containsOnlyKeys("Retry-After");
        assertThat(Map.copyOf(refused.getHeaders()).get("Retry-After")).isEqualTo("3600");
    }
}
