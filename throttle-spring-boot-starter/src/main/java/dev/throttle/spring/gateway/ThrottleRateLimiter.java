package dev.throttle.spring.gateway;

import dev.throttle.Decision;
import dev.throttle.Policy;
import dev.throttle.ThrottledException;
import dev.throttle.spring.admission.Admission;
import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.admission.Charge;
import dev.throttle.spring.admission.PolicyDecision;
import dev.throttle.spring.web.RateLimitHeaders;
import dev.throttle.spring.web.Refusal;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import org.springframework.cloud.gateway.event.FilterArgsEvent;
import org.springframework.cloud.gateway.filter.ratelimit.AbstractRateLimiter;
import org.springframework.cloud.gateway.support.ConfigurationService;
import org.springframework.http.HttpHeaders;
import reactor.core.publisher.Mono;

/**
 * A {@link org.springframework.cloud.gateway.filter.ratelimit.RateLimiter} for Spring Cloud Gateway's
 * {@code RequestRateLimiter} filter, deciding by the policies under {@code throttle.policies} in the
 * configured store (memory or Redis, with its failure mode and near cache). A route names its policy
 * among the filter's arguments, and the gateway's {@code KeyResolver} gives the key:
 *
 * <pre>
 * filters:
 *   - name: RequestRateLimiter
 *     args:
 *       key-resolver: "#{&#64;clientKeyResolver}"
 *       throttle.policy: api       # a policy under throttle.policies (required)
 *       throttle.plan: partner     # one of its plans, for every call of this route (optional)
 *       throttle.cost: 2           # units one call takes (optional, default 1)
 * </pre>
 *
 * Every response the filter lets through carries {@code RateLimit-Policy} and {@code RateLimit}; a
 * refusal, answered by the gateway with the filter's status (429 unless set), also carries
 * {@code Retry-After} in whole seconds (none for a call that can never pass). Decided through the
 * admission API without blocking (one store round trip per call). The filter never tells how the
 * backend answered, so each call keeps what it took: {@code reset-on-success} and
 * {@code count: failures} do not apply to calls through the gateway.
 *
 * <p>Thread-safe.
 */
public final class ThrottleRateLimiter extends AbstractRateLimiter<ThrottleRateLimiter.Config> {

    /** The prefix of this limiter's arguments in a route's {@code RequestRateLimiter} filter. */
    public static final String CONFIGURATION_PROPERTY_NAME = "throttle";

    private final Admissions admissions;

    private final boolean rateLimitHeaders;

    /** Each route's charge, made once from its arguments (a route's arguments change only with the route). */
    private final Map<String, Charge> charges = new ConcurrentHashMap<>();

    /**
     * Creates the limiter.
     * @param admissions the charges of the configured policies
     * @param rateLimitHeaders whether responses carry {@code RateLimit-Policy} and {@code RateLimit}
     * ({@code throttle.http.headers})
     * @param configurationService the gateway's binder of filter arguments
     */
    public ThrottleRateLimiter(
            Admissions admissions, boolean rateLimitHeaders, ConfigurationService configurationService) {
        super(Config.class, CONFIGURATION_PROPERTY_NAME, configurationService);
        this.admissions = admissions;
        this.rateLimitHeaders = rateLimitHeaders;
    }

    /**
     * Binds a route's arguments, and fails the route (the gateway logs it and leaves the route out)
     * when they name no configured policy.
     */
    @Override
    public void onApplicationEvent(FilterArgsEvent event) {
        super.onApplicationEvent(event);
        Config config = getConfig().get(event.getRouteId());
        if (config != null) {
            this.charges.put(event.getRouteId(), charge(event.getRouteId(), config));
        }
    }

    @Override
    public Mono<Response> isAllowed(String routeId, String id) {
        Charge charge;
        try {
            charge = charge(routeId);
        } catch (RuntimeException ex) {
            return Mono.error(ex);
        }
        return Mono.fromCompletionStage(() -> Admission.decideAsync(List.of(charge), new @Nullable String[] {id}))
                .map((admission) -> {
                    // the gateway does not say how the backend answered: the call keeps what it took
                    admission.failed();
                    return new Response(true, allowedHeaders(charge.policy(), admission.decision(0)));
                })
                .onErrorResume(
                        ThrottledException.class, (refused) -> Mono.just(new Response(false, refusedHeaders(refused))));
    }

    private Charge charge(String routeId) {
        Charge charge = this.charges.get(routeId);
        if (charge != null) {
            return charge;
        }
        // routes defined in Java set their configuration directly, without the event
        Config config = getConfig().get(routeId);
        if (config == null) {
            throw new IllegalStateException("Route '" + routeId + "' uses throttle's RateLimiter without naming a "
                    + "policy: add the argument " + CONFIGURATION_PROPERTY_NAME
                    + ".policy to its RequestRateLimiter filter");
        }
        return this.charges.computeIfAbsent(routeId, (id) -> charge(id, config));
    }

    private Charge charge(String routeId, Config config) {
        String policy = config.getPolicy();
        if (policy == null || policy.isBlank()) {
            throw new IllegalArgumentException("Route '" + routeId + "': the RequestRateLimiter filter's argument "
                    + CONFIGURATION_PROPERTY_NAME + ".policy must name a policy under throttle.policies");
        }
        Charge charge;
        try {
            charge = this.admissions.charge(policy.trim());
        } catch (IllegalArgumentException ex) {
            throw new IllegalArgumentException(
                    "Route '" + routeId + "': " + CONFIGURATION_PROPERTY_NAME + ".policy " + ex.getMessage(), ex);
        }
        String plan = config.getPlan();
        if (plan != null && !plan.isBlank() && !charge.bound().plans().containsKey(plan.trim())) {
            throw new IllegalArgumentException("Route '" + routeId + "': " + CONFIGURATION_PROPERTY_NAME + ".plan '"
                    + plan + "' is no plan of policy '" + policy + "'; known: "
                    + charge.bound().plans().keySet());
        }
        if (config.getCost() < 1) {
            throw new IllegalArgumentException("Route '" + routeId + "': " + CONFIGURATION_PROPERTY_NAME
                    + ".cost must be at least 1, was " + config.getCost());
        }
        return charge.choose((plan != null) ? plan.trim() : null, config.getCost());
    }

    private Map<String, String> allowedHeaders(Policy policy, Decision decision) {
        if (!this.rateLimitHeaders) {
            return Map.of();
        }
        List<PolicyDecision> items = List.of(new PolicyDecision(policy, decision));
        return Map.of(
                RateLimitHeaders.POLICY, RateLimitHeaders.policy(items),
                RateLimitHeaders.LIMIT, RateLimitHeaders.limit(items));
    }

    private Map<String, String> refusedHeaders(ThrottledException refused) {
        Refusal refusal = Refusal.of(refused.getPolicy(), refused.getDecision(), this.rateLimitHeaders);
        Map<String, String> headers = new LinkedHashMap<>();
        refusal.retryAfterSeconds()
                .ifPresent((seconds) -> headers.put(HttpHeaders.RETRY_AFTER, Long.toString(seconds)));
        if (refusal.rateLimitPolicy() != null) {
            headers.put(RateLimitHeaders.POLICY, refusal.rateLimitPolicy());
        }
        if (refusal.rateLimit() != null) {
            headers.put(RateLimitHeaders.LIMIT, refusal.rateLimit());
        }
        return headers;
    }

    /** A route's arguments: {@code throttle.policy}, {@code throttle.plan}, {@code throttle.cost}. */
    public static final class Config {

        /** The policy under {@code throttle.policies} that decides the route's calls. */
        private @Nullable String policy;

        /** One of the policy's plans, for every call of the route; none: the policy's base numbers. */
        private @Nullable String plan;

        /** Units one call takes. */
        private int cost = 1;

        public @Nullable String getPolicy() {
            return this.policy;
        }

        public Config setPolicy(@Nullable String policy) {
            this.policy = policy;
            return this;
        }

        public @Nullable String getPlan() {
            return this.plan;
        }

        public Config setPlan(@Nullable String plan) {
            this.plan = plan;
            return this;
        }

        public int getCost() {
            return this.cost;
        }

        public Config setCost(int cost) {
            this.cost = cost;
            return this;
        }

        @Override
        public String toString() {
            return "Config[policy=" + this.policy + ", plan=" + this.plan + ", cost=" + this.cost + "]";
        }
    }
}
