package dev.throttle.spring.actuate;

import dev.throttle.spring.bans.ActiveBan;
import dev.throttle.spring.bans.BanRule;
import dev.throttle.spring.bans.Bans;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BinaryOperator;
import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.convert.DurationStyle;

/**
 * The {@code throttlebans} actuator endpoint: {@code GET /actuator/throttlebans} lists the configured
 * bans and the active ones (with their keys: this is the operator's view);
 * {@code POST /actuator/throttlebans/{ban}/{key}} with {@code {"duration": "10m"}} bans a key by
 * hand; {@code DELETE /actuator/throttlebans/{ban}/{key}} lifts a ban. On a store a fleet shares
 * (Redis), a ban added or lifted here reaches every instance.
 *
 * <p>Read-only by default, like the {@code throttle} endpoint: adding and lifting bans need
 * {@code management.endpoint.throttlebans.access=unrestricted}.
 */
@Endpoint(id = "throttlebans", defaultAccess = Access.READ_ONLY)
public class ThrottleBansEndpoint {

    /** The longest a lift waits for the store to take it. */
    private static final Duration BOUND = Duration.ofSeconds(5);

    private final Bans bans;

    private final BinaryOperator<String> keys;

    /**
     * Creates the endpoint, which takes each key as it is typed.
     * @param bans the bans
     */
    public ThrottleBansEndpoint(Bans bans) {
        this(bans, (ban, key) -> key);
    }

    /**
     * Creates the endpoint.
     * @param bans the bans
     * @param keys the key a ban holds for a key an operator typed, given the ban's name and the
     * typed key: for a ban keyed by {@code #ip}, the key of that address's requests, whatever
     * spelling of the address was typed
     */
    public ThrottleBansEndpoint(Bans bans, BinaryOperator<String> keys) {
        this.bans = bans;
        this.keys = keys;
    }

    /**
     * Lists the configured bans and the active ones, soonest ending first.
     * @return a description
     */
    @ReadOperation
    public Map<String, Object> bans() {
        Map<String, Object> configured = new LinkedHashMap<>();
        this.bans.rules().forEach((name, rule) -> configured.put(name, describe(rule)));
        List<Map<String, Object>> active = new ArrayList<>();
        for (ActiveBan ban : this.bans.active()) {
            active.add(describe(ban));
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("configured", configured);
        body.put("active", active);
        return body;
    }

    /**
     * Bans a key by hand from now on (or extends its ban), here at once and on every instance
     * sharing the store.
     * @param ban the ban's name, one of the configured bans
     * @param key the key (a client address for a ban keyed by {@code #ip}, in any literal spelling)
     * @param duration how long: {@code 10m}, {@code 1h}, {@code PT30S}
     * @return the ban (200); an unknown ban (404); a duration that is not one or not positive (400)
     */
    @WriteOperation
    public WebEndpointResponse<Map<String, Object>> start(@Selector String ban, @Selector String key, String duration) {
        if (!this.bans.rules().containsKey(ban)) {
            return unknown(ban);
        }
        if (duration != null && duration.trim().matches("[+-]?\\d+")) {
            // a bare number would be milliseconds: a ban of 123 ms is never what was meant
            return message(
                    "'" + duration + "' has no unit: write " + duration.trim() + "s, " + duration.trim() + "m or "
                            + duration.trim() + "h",
                    WebEndpointResponse.STATUS_BAD_REQUEST);
        }
        Duration length;
        try {
            length = DurationStyle.detectAndParse(duration);
        } catch (IllegalArgumentException ex) {
            return message(
                    "'" + duration + "' is no duration (10m, 1h, PT30S)", WebEndpointResponse.STATUS_BAD_REQUEST);
        }
        if (length.isNegative() || length.isZero()) {
            return message(
                    "A ban's duration must be positive, was " + duration, WebEndpointResponse.STATUS_BAD_REQUEST);
        }
        try {
            return new WebEndpointResponse<>(describe(this.bans.start(ban, this.keys.apply(ban, key), length)));
        } catch (IllegalArgumentException ex) {
            return message(ex.getMessage(), WebEndpointResponse.STATUS_BAD_REQUEST);
        }
    }

    /**
     * Lifts a key's ban, here at once and on every instance sharing the store.
     * @param ban the ban's name
     * @param key the key
     * @return whether this instance held it (200); an unknown ban (404); a store that could not take
     * the lift (503: lifted on this instance only)
     */
    @DeleteOperation
    public WebEndpointResponse<Map<String, Object>> lift(@Selector String ban, @Selector String key) {
        if (!this.bans.rules().containsKey(ban)) {
            return unknown(ban);
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("ban", ban);
        try {
            boolean held = this.bans
                    .lift(ban, this.keys.apply(ban, key))
                    .toCompletableFuture()
                    .get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
            body.put("lifted", true);
            body.put("was-active", held);
            return new WebEndpointResponse<>(body);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            return unstored(body);
        } catch (ExecutionException | TimeoutException ex) {
            return unstored(body);
        }
    }

    private static WebEndpointResponse<Map<String, Object>> unstored(Map<String, Object> body) {
        body.put("lifted", false);
        body.put(
                "message",
                "The store could not take the lift: it is lifted on this instance only, and other instances keep "
                        + "the ban until it ends or the lift is sent again");
        return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE);
    }

    private WebEndpointResponse<Map<String, Object>> unknown(String ban) {
        return message(
                "No ban '" + ban + "' (configured: "
                        + String.join(", ", this.bans.rules().keySet()) + ")",
                WebEndpointResponse.STATUS_NOT_FOUND);
    }

    private static WebEndpointResponse<Map<String, Object>> message(String message, int status) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("message", message);
        return new WebEndpointResponse<>(body, status);
    }

    private Map<String, Object> describe(ActiveBan ban) {
        Map<String, Object> described = new LinkedHashMap<>();
        described.put("ban", ban.ban());
        described.put("key", ban.key());
        described.put("until", ban.until().toString());
        described.put("remaining-seconds", (this.bans.remaining(ban).toMillis() + 999) / 1000);
        return described;
    }

    private static Map<String, Object> describe(BanRule rule) {
        Map<String, Object> described = new LinkedHashMap<>();
        described.put("after", rule.after());
        described.put("within", rule.within().toString());
        described.put("policies", rule.policies().isEmpty() ? "all" : List.copyOf(rule.policies()));
        described.put("for", rule.length().toString());
        described.put("status", rule.status());
        return described;
    }
}
