package dev.throttle.spring.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.throttle.FixedWindowPolicy;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.admission.Admissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.cloud.gateway.filter.ratelimit.RateLimiter;

/**
 * The RateLimiter alone, with routes configured in Java: a route's mistakes are told with the route
 * and the argument to fix, and {@code throttle.http.headers: none} leaves the headers out.
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
