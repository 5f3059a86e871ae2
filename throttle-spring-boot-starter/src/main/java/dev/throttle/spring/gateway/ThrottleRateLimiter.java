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
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.cloud.gateway.event.FilterArgsEvent;
import org.springframework.cloud.gateway.filter.ratelimit.AbstractRateLimiter;
import org.springframework.cloud.gateway.filter.ratelimit.RateLimiter;
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
 * {@code Retry-After} in whole seconds. Decided through the admission API without blocking (one store
 * round trip per call); a call of a policy with a {@code wait} that got a later turn is let through
 * at its turn (a timer, no thread held), and gives the turn back when its client leaves first. The
 * filter never tells how the backend answered, so each call keeps what it took: {@code reset-on-success}
 * and {@code count: failures} do not apply to calls through the gateway, and a concurrency policy,
 * whose slot would have to be released when the call ends, is refused for a route.
 *
 * <p>A route's mistakes (no such policy or plan, a cost the policy cannot grant, an unknown
 * {@code throttle.} argument, a concurrency policy) fail the binding of its filter, which the gateway
 * reports when it loads its routes (at startup for routes in properties). A route whose
 * {@code RequestRateLimiter} has only the gateway's own {@code redis-rate-limiter.} arguments keeps
 * the gateway's {@code RedisRateLimiter}, to which its calls are handed.
 *
 * <p>Thread-safe.
 */
public final class ThrottleRateLimiter extends AbstractRateLimiter<ThrottleRateLimiter.Config> {

    /** The prefix of this limiter's arguments in a route's {@code RequestRateLimiter} filter. */
    public static final String CONFIGURATION_PROPERTY_NAME = "throttle";

    /** The charges of the configured policies; null when throttling is off, and every call is let through. */
    private final @Nullable Admissions admissions;

    /** The configured policies' names, checked against a route's policy where throttling is off. */
    private final Set<String> policyNames;

    private final boolean rateLimitHeaders;

    /** The arguments a route's filter may give this limiter, after the prefix. */
    private static final Set<String> ARGUMENTS = Set.of("policy", "plan", "cost");

    /** The prefix of the arguments of the gateway's own {@code RedisRateLimiter}. */
    private static final String REDIS_RATE_LIMITER_ARGUMENTS = "redis-rate-limiter.";

    /** Each route's charge, made once from its arguments (a route's arguments change only with the route). */
    private final Map<String, Charge> charges = new ConcurrentHashMap<>();

    /** The routes whose filter has the gateway's own Redis arguments and none of this limiter's. */
    private final Set<String> redisRoutes = ConcurrentHashMap.newKeySet();

    /** The gateway's own Redis rate limiter, when it has one (Spring Data Redis Reactive present). */
    private final Supplier<@Nullable RateLimiter<?>> redisRateLimiter;

    /**
     * Creates the limiter.
     * @param admissions the charges of the configured policies
     * @param rateLimitHeaders whether responses carry {@code RateLimit-Policy} and {@code RateLimit}
     * ({@code throttle.http.headers})
     * @param configurationService the gateway's binder of filter arguments
     */
    public ThrottleRateLimiter(
            Admissions admissions, boolean rateLimitHeaders, ConfigurationService configurationService) {
        this(admissions, rateLimitHeaders, configurationService, () -> null);
    }

    /**
     * Creates the limiter, handing the routes that configure the gateway's own Redis rate limiter to it.
     * @param admissions the charges of the configured policies
     * @param rateLimitHeaders whether responses carry {@code RateLimit-Policy} and {@code RateLimit}
     * ({@code throttle.http.headers})
     * @param configurationService the gateway's binder of filter arguments
     * @param redisRateLimiter the gateway's {@code RedisRateLimiter}, or a supplier of null without one
     */
    public ThrottleRateLimiter(
            Admissions admissions,
            boolean rateLimitHeaders,
            ConfigurationService configurationService,
            Supplier<@Nullable RateLimiter<?>> redisRateLimiter) {
        this(configurationService, redisRateLimiter, admissions, rateLimitHeaders, Set.of());
    }

    private ThrottleRateLimiter(
            ConfigurationService configurationService,
            Supplier<@Nullable RateLimiter<?>> redisRateLimiter,
            @Nullable Admissions admissions,
            boolean rateLimitHeaders,
            Set<String> policyNames) {
        super(Config.class, CONFIGURATION_PROPERTY_NAME, configurationService);
        this.admissions = admissions;
        this.rateLimitHeaders = rateLimitHeaders;
        this.redisRateLimiter = redisRateLimiter;
        this.policyNames = policyNames;
    }

    /**
     * The limiter of a gateway where throttling is off ({@code throttle.enabled=false}): a route's
     * {@code throttle.} arguments still bind, and an unknown argument or a policy that is not configured
     * still fails its route (a mistake found where throttling is off, not first where it is on); every
     * call of such a route is let through without a decision or a header. A route with only the
     * gateway's own {@code redis-rate-limiter.} arguments is still handed to its {@code RedisRateLimiter}.
     * @param configurationService the gateway's binder of filter arguments
     * @param redisRateLimiter the gateway's {@code RedisRateLimiter}, or a supplier of null without one
     * @param policyNames the names of the policies under {@code throttle.policies}
     * @return a limiter that allows every call of a route that names a policy
     */
    public static ThrottleRateLimiter unthrottled(
            ConfigurationService configurationService,
            Supplier<@Nullable RateLimiter<?>> redisRateLimiter,
            Set<String> policyNames) {
        return new ThrottleRateLimiter(configurationService, redisRateLimiter, null, false, Set.copyOf(policyNames));
    }

    /**
     * Binds a route's arguments, and fails the binding of its filter (with the route and the argument
     * to fix) when they name no configured policy, name an argument this limiter does not have, or
     * configure only the gateway's own Redis rate limiter while none is defined.
     */
    @Override
    public void onApplicationEvent(FilterArgsEvent event) {
        String routeId = event.getRouteId();
        boolean ours = false;
        boolean redis = false;
        for (String name : event.getArgs().keySet()) {
            if (name.startsWith(CONFIGURATION_PROPERTY_NAME + ".")) {
                ours = true;
                String argument = name.substring(CONFIGURATION_PROPERTY_NAME.length() + 1);
                if (!ARGUMENTS.contains(argument)) {
                    throw new ThrottleRouteException("Route '" + routeId + "': the RequestRateLimiter filter's "
                            + "argument '" + name + "' is not one of throttle's: " + CONFIGURATION_PROPERTY_NAME
                            + ".policy, " + CONFIGURATION_PROPERTY_NAME + ".plan, " + CONFIGURATION_PROPERTY_NAME
                            + ".cost");
                }
            } else if (name.startsWith(REDIS_RATE_LIMITER_ARGUMENTS)) {
                redis = true;
            }
        }
        if (redis && !ours) {
            if (this.redisRateLimiter.get() == null) {
                throw new ThrottleRouteException("Route '" + routeId + "': its RequestRateLimiter filter has "
                        + "redis-rate-limiter arguments, but the gateway defines no RedisRateLimiter (it needs "
                        + "spring-boot-starter-data-redis-reactive); name a policy with "
                        + CONFIGURATION_PROPERTY_NAME + ".policy to throttle the route by throttle.policies");
            }
            this.redisRoutes.add(routeId);
            this.charges.remove(routeId);
            return;
        }
        try {
            super.onApplicationEvent(event);
        } catch (RuntimeException ex) {
            // the gateway's binder names the argument and the value, not the route
            throw new ThrottleRouteException(
                    "Route '" + routeId + "': its RequestRateLimiter arguments do not bind: " + deepest(ex), ex);
        }
        Config config = getConfig().get(routeId);
        if (config != null) {
            this.redisRoutes.remove(routeId);
            if (this.admissions != null) {
                this.charges.put(routeId, charge(routeId, config));
            } else {
                String policy =
                        (config.getPolicy() != null) ? config.getPolicy().trim() : "";
                if (!this.policyNames.contains(policy)) {
                    throw new ThrottleRouteException("Route '" + routeId + "': " + CONFIGURATION_PROPERTY_NAME
                            + ".policy: no policy named '" + policy + "'; known: " + this.policyNames);
                }
            }
        }
    }

    @Override
    public Mono<Response> isAllowed(String routeId, String id) {
        if (this.redisRoutes.contains(routeId)) {
            RateLimiter<?> redis = this.redisRateLimiter.get();
            if (redis != null) {
                return redis.isAllowed(routeId, id);
            }
        }
        if (this.admissions == null) {
            return Mono.just(new Response(true, Map.of()));
        }
        Charge charge;
        try {
            charge = charge(routeId);
        } catch (RuntimeException ex) {
            return Mono.error(ex);
        }
        return Mono.fromCompletionStage(() -> Admission.decideAsync(List.of(charge), new @Nullable String[] {id}))
                .flatMap((admission) -> {
                    Response allowed = new Response(true, allowedHeaders(charge.policy(), admission.decision(0)));
                    if (admission.waitMillis() == 0) {
                        return Mono.just(allowed);
                    }
                    // a turn later than now: the call passes at its turn; a client that leaves gives it back
                    return Mono.delay(admission.untilTurn()).thenReturn(allowed).doOnCancel(admission::refundAsync);
                })
                .onErrorResume(
                        ThrottledException.class, (refused) -> Mono.just(new Response(false, refusedHeaders(refused))));
    }

    private static String deepest(Throwable failure) {
        Throwable deepest = failure;
        while (deepest.getCause() != null && deepest.getCause() != deepest) {
            deepest = deepest.getCause();
        }
        return (deepest == failure)
                ? String.valueOf(failure.getMessage())
                : failure.getMessage() + " (" + deepest.getMessage() + ")";
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
            throw new ThrottleRouteException("Route '" + routeId + "': the RequestRateLimiter filter's argument "
                    + CONFIGURATION_PROPERTY_NAME + ".policy must name a policy under throttle.policies");
        }
        Admissions admissions = this.admissions;
        if (admissions == null) {
            throw new IllegalStateException("throttling is off");
        }
        Charge charge;
        try {
            charge = admissions.charge(policy.trim());
        } catch (IllegalArgumentException ex) {
            throw new ThrottleRouteException(
                    "Route '" + routeId + "': " + CONFIGURATION_PROPERTY_NAME + ".policy: " + ex.getMessage(), ex);
        }
        String plan = config.getPlan();
        if (plan != null && !plan.isBlank() && !charge.bound().plans().containsKey(plan.trim())) {
            throw new ThrottleRouteException("Route '" + routeId + "': " + CONFIGURATION_PROPERTY_NAME + ".plan '"
                    + plan + "' is no plan of policy '" + policy + "'; known: "
                    + charge.bound().plans().keySet());
        }
        if (config.getCost() < 1) {
            throw new ThrottleRouteException("Route '" + routeId + "': " + CONFIGURATION_PROPERTY_NAME
                    + ".cost must be at least 1, was " + config.getCost());
        }
        if (charge.releasesAtEnd()) {
            throw new ThrottleRouteException("Route '" + routeId + "': " + CONFIGURATION_PROPERTY_NAME + ".policy '"
                    + policy + "' is a concurrency policy, whose slot is held until the call ends; a gateway "
                    + "RateLimiter is never told when a call ends, so it cannot hold one: throttle the backend's "
                    + "handler instead (@Throttled)");
        }
        Charge chosen = charge.choose((plan != null) ? plan.trim() : null, config.getCost());
        Policy numbers = chosen.policy();
        if (config.getCost() > numbers.maxCost()) {
            throw new ThrottleRouteException("Route '" + routeId + "': " + CONFIGURATION_PROPERTY_NAME + ".cost is "
                    + config.getCost() + ", but policy '" + numbers.name() + "' (" + numbers.algorithm()
                    + ") can only grant a cost from 1 to " + numbers.maxCost() + ": every call would be refused");
        }
        return chosen;
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
