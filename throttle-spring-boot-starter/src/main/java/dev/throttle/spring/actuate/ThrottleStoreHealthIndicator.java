package dev.throttle.spring.actuate;

import dev.throttle.ThrottleStore;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.resilience.StoreUnavailableException;
import java.time.Instant;
import java.util.Locale;
import java.util.Optional;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * The throttle store's health, as the decisions found it: {@code UP} while the store answers;
 * {@code DOWN} during an outage, with the failure mode that answers in the store's place
 * ({@code failure-mode}), when the outage started ({@code since}) and what started it
 * ({@code error}, the store's message, which names no key). Details always say which store it is
 * ({@code store}).
 *
 * <p>It sends nothing to the store: an outage is started by the calls that fail and ended by the
 * failure policy's probe, so a health request costs nothing and a store that is slow to answer
 * never makes the health endpoint slow. A store without a failure policy (the memory store) is
 * always up.
 *
 * <p>Not a member of the readiness group unless the application includes it
 * ({@code management.endpoint.health.group.readiness.include}): while the failure mode answers,
 * the instance still serves, so an outage of a shared store should not take every instance out of
 * the load balancer at once.
 */
public final class ThrottleStoreHealthIndicator implements HealthIndicator {

    private final ThrottleStore store;

    /**
     * Creates the indicator.
     * @param store the application's throttle store
     */
    public ThrottleStoreHealthIndicator(ThrottleStore store) {
        this.store = store;
    }

    @Override
    public Health health() {
        if (!(this.store instanceof ResilientThrottleStore resilient)) {
            return Health.up().withDetail("store", this.store.kind()).build();
        }
        Optional<Instant> since = resilient.outageSince();
        if (since.isEmpty()) {
            return Health.up()
                    .withDetail("store", resilient.kind())
                    .withDetail("failure-mode", mode(resilient))
                    .build();
        }
        Health.Builder down = Health.down()
                .withDetail("store", resilient.kind())
                .withDetail("failure-mode", mode(resilient))
                .withDetail("since", since.get().toString());
        Optional<StoreUnavailableException> cause = resilient.outageCause();
        if (cause.isPresent()) {
            // the failure's own message, not the exception: a health response carries no stack trace
            Throwable error = (cause.get().getCause() != null) ? cause.get().getCause() : cause.get();
            down.withDetail("error", String.valueOf(error.getMessage()));
        }
        return down.build();
    }

    private static String mode(ResilientThrottleStore store) {
        return store.failureMode().name().toLowerCase(Locale.ROOT);
    }
}
