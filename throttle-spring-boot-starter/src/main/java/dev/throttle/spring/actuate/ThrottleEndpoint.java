package dev.throttle.spring.actuate;

import dev.throttle.ConcurrencyPolicy;
import dev.throttle.Decision;
import dev.throttle.Policy;
import dev.throttle.Throttler;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.fleet.StoredPolicyChange;
import java.security.Principal;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;

/**
 * The {@code throttle} actuator endpoint: {@code GET /actuator/throttle} lists the policies (with
 * their plans' numbers);
 * {@code GET /actuator/throttle/{policy}/{key}} shows a key's state without consuming anything;
 * {@code DELETE /actuator/throttle/{policy}/{key}} forgets it (unlocks a user);
 * {@code POST /actuator/throttle/{policy}} with a JSON object of the policy's YAML settings
 * ({@code {"limit": 2}}) changes them on this instance, keeping every key's state (see
 * {@link PolicyChanges}). Like every
 * endpoint, it is reachable over HTTP only when the application exposes it.
 *
 * <p>Its default access is read-only: a reset unlocks an account, and an application that
 * exposes every endpoint ({@code management.endpoints.web.exposure.include=*}) without securing
 * them would otherwise let anyone do it. The application grants writes with
 * {@code management.endpoint.throttle.access=unrestricted} (or every endpoint's with
 * {@code management.endpoints.access.default=unrestricted}); {@code none} turns the endpoint off.
 */
@Endpoint(id = "throttle", defaultAccess = Access.READ_ONLY)
public class ThrottleEndpoint {

    private final Throttler throttler;

    private final @Nullable PolicyChanges changes;

    /**
     * Creates the endpoint, without changes at run time.
     * @param throttler the throttler
     */
    public ThrottleEndpoint(Throttler throttler) {
        this(throttler, null);
    }

    /**
     * Creates the endpoint.
     * @param throttler the throttler
     * @param changes applies changes at run time, or null when none are allowed
     */
    @Autowired
    public ThrottleEndpoint(Throttler throttler, @Nullable PolicyChanges changes) {
        this.throttler = throttler;
        this.changes = changes;
    }

    /**
     * Lists the store and the policies with their settings.
     * @return a description
     */
    @ReadOperation
    public Map<String, Object> policies() {
        Map<String, Object> policies = new LinkedHashMap<>();
        this.throttler.policies().forEach((name, policy) -> policies.put(name, applied(name)));
        Map<String, Object> description = new LinkedHashMap<>();
        description.put("store", this.throttler.store().kind());
        description.put("policies", policies);
        return description;
    }

    /**
     * Shows what a call would be told now for a key, without taking anything.
     * @param policy the policy's name
     * @param key the key
     * @return the decision, or null (404) for an unknown policy
     */
    @ReadOperation
    public @Nullable Map<String, Object> peek(@Selector String policy, @Selector String key) {
        if (!this.throttler.policies().containsKey(policy)) {
            return null;
        }
        Decision decision = this.throttler.peek(policy, key);
        Map<String, Object> state = new LinkedHashMap<>();
        state.put("policy", policy);
        state.put("allowed", decision.allowed());
        state.put("limit", decision.limit());
        state.put("remaining", decision.remaining());
        state.put("retryAfterMillis", decision.retryAfterMillis());
        state.put("resetAfterMillis", decision.resetAfterMillis());
        if (this.throttler.policy(policy) instanceof ConcurrencyPolicy) {
            // the slots the key holds, across every instance sharing the store
            state.put("slotsInUse", Math.max(0, decision.limit() - decision.remaining()));
        }
        return state;
    }

    /**
     * Forgets a key's state under a policy.
     * @param policy the policy's name
     * @param key the key
     * @return the policy and {@code reset: true} (200); or, when the store could not be reached (Redis
     * down: the key is reset only in this instance's fallback for now, and in the store when it
     * answers again), {@code reset: false} with a message naming the policy and never the key (503),
     * so that nobody is told a user is unlocked while the store still locks them out
     * @throws InvalidEndpointRequestException (400) for an unknown policy: an operator who mistyped
     * it must not be told, by an empty success, that the user is unlocked
     */
    @DeleteOperation
    public WebEndpointResponse<Map<String, Object>> reset(@Selector String policy, @Selector String key) {
        if (!this.throttler.policies().containsKey(policy)) {
            String message = "No throttle policy '" + policy + "' (configured: "
                    + String.join(", ", this.throttler.policies().keySet()) + ")";
            throw new InvalidEndpointRequestException(message, message);
        }
        boolean reset = this.throttler.reset(policy, key);
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("policy", policy);
        body.put("reset", reset);
        if (reset) {
            return new WebEndpointResponse<>(body);
        }
        String store = this.throttler.store().kind();
        body.put(
                "message",
                "The throttle store '" + store + "' could not be reached for policy '" + policy
                        + "': the key is not reset in it yet. This instance will reset it in the store when the store answers "
                        + "again, unless it stops first; retry once the store is back to be sure.");
        return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE);
    }

    /**
     * Changes settings of a policy on this instance (write access only). Over HTTP the request's JSON
     * object is the changes ({@code {"limit": 2}}): {@link ThrottleEndpointChanges} hands it to
     * {@link #update(String, Map)}. Without changes, this answers the policy as it applies.
     * @param policy the policy's name
     * @return the policy as now applied (200)
     */
    @WriteOperation
    public WebEndpointResponse<Map<String, Object>> update(@Selector String policy) {
        return update(policy, Map.of());
    }

    /**
     * Changes settings of a policy on this instance, validated as at startup; a change with a mistake
     * changes nothing. Keys keep their state.
     * @param policy the policy's name
     * @param changes YAML setting names to new values, for example {@code limit -> 2}
     * @return the policy as now applied (200); the mistakes, each naming its property (400); an
     * unknown policy (404)
     */
    public WebEndpointResponse<Map<String, Object>> update(String policy, Map<String, Object> changes) {
        return update(policy, changes, null);
    }

    /**
     * Changes settings of a policy as {@link #update(String, Map)} does, naming who changes it: on a
     * store a fleet shares (Redis), the change is stored and reaches every instance.
     * @param policy the policy's name
     * @param changes YAML setting names to new values
     * @param principal the caller, or null
     * @return as {@link #update(String, Map)}
     */
    public WebEndpointResponse<Map<String, Object>> update(
            String policy, Map<String, Object> changes, @Nullable Principal principal) {
        Map<String, Object> body = new LinkedHashMap<>();
        if (!this.throttler.policies().containsKey(policy)) {
            body.put(
                    "message",
                    "No throttle policy '" + policy + "' (configured: "
                            + String.join(", ", this.throttler.policies().keySet()) + ")");
            return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_NOT_FOUND);
        }
        if (!changes.isEmpty()) {
            if (this.changes == null) {
                body.put("message", "This application does not change throttle policies at run time");
                return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_BAD_REQUEST);
            }
            try {
                this.changes.update(policy, changes, by(principal));
            } catch (ThrottleConfigurationException ex) {
                body.put("policy", policy);
                body.put("problems", ex.problems());
                return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_BAD_REQUEST);
            } catch (RuntimeException ex) {
                return unstored(policy, ex);
            }
        }
        body.put("policy", policy);
        body.putAll(applied(policy));
        return new WebEndpointResponse<>(body);
    }

    /**
     * Reverts a policy to its configuration (write access only): on a store a fleet shares, on every
     * instance.
     * @param policy the policy's name
     * @param principal the caller, or null
     * @return the policy as now applied (200); an unknown policy (404); a store that could not take
     * the revert (503, nothing changed)
     */
    @DeleteOperation
    public WebEndpointResponse<Map<String, Object>> revert(@Selector String policy, @Nullable Principal principal) {
        Map<String, Object> body = new LinkedHashMap<>();
        if (!this.throttler.policies().containsKey(policy)) {
            body.put(
                    "message",
                    "No throttle policy '" + policy + "' (configured: "
                            + String.join(", ", this.throttler.policies().keySet()) + ")");
            return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_NOT_FOUND);
        }
        if (this.changes == null) {
            body.put("message", "This application does not change throttle policies at run time");
            return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_BAD_REQUEST);
        }
        try {
            this.changes.revert(policy, by(principal));
        } catch (RuntimeException ex) {
            return unstored(policy, ex);
        }
        body.put("policy", policy);
        body.putAll(applied(policy));
        return new WebEndpointResponse<>(body);
    }

    private static WebEndpointResponse<Map<String, Object>> unstored(String policy, RuntimeException ex) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("policy", policy);
        body.put(
                "message",
                "The change of policy '" + policy + "' could not be stored (" + ex.getMessage()
                        + "); nothing changed. Retry once the store answers.");
        return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE);
    }

    private static String by(@Nullable Principal principal) {
        return (principal != null && principal.getName() != null) ? principal.getName() : "unknown";
    }

    /** A policy as it applies now: algorithm, settings, plans' numbers and mode. */
    private Map<String, Object> applied(String name) {
        Map<String, Object> described = describe(this.throttler.policy(name));
        Map<String, Policy> plans = this.throttler.plans(name);
        if (!plans.isEmpty()) {
            Map<String, Object> numbers = new LinkedHashMap<>();
            plans.forEach((plan, planned) -> {
                Map<String, Object> settings = describe(planned);
                settings.remove("algorithm");
                numbers.put(plan, settings);
            });
            described.put("plans", numbers);
        }
        if (this.changes != null) {
            described.put("mode", this.changes.isShadow(name) ? "shadow" : "enforce");
            StoredPolicyChange change = this.changes.lastChange(name);
            if (change != null) {
                Map<String, Object> changed = new LinkedHashMap<>();
                changed.put("by", change.by());
                changed.put("at", change.at().toString());
                changed.put("version", change.version());
                changed.put("settings", change.settings());
                described.put("changed", changed);
                Map<String, Object> configured = this.changes.configured(name);
                if (configured != null) {
                    Map<String, Object> numbers = new LinkedHashMap<>();
                    configured.forEach((setting, value) -> numbers.put(setting, text(value)));
                    described.put("configured", numbers);
                }
            }
        }
        return described;
    }

    /** The policy's algorithm and settings by configuration name; durations as ISO-8601 text. */
    private static Map<String, Object> describe(Policy policy) {
        Map<String, Object> settings = new LinkedHashMap<>();
        settings.put("algorithm", policy.algorithm().id());
        policy.algorithm().settings(policy).forEach((parameter, value) -> settings.put(parameter, text(value)));
        return settings;
    }

    private static Object text(Object value) {
        if (value instanceof Duration duration) {
            return duration.toString();
        }
        if (value instanceof List<?> values) {
            return values.stream().map(ThrottleEndpoint::text).toList();
        }
        if (value instanceof Map<?, ?> limit) {
            // one of several limits
            Map<Object, Object> settings = new LinkedHashMap<>();
            limit.forEach((parameter, setting) -> settings.put(parameter, text(setting)));
            return settings;
        }
        return value;
    }
}
