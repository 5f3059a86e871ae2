package dev.throttle.spring.metrics;

import dev.throttle.spring.client.OutgoingCallListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Records what the throttled outgoing clients do, in every registry it is bound to:
 * <ul>
 * <li>{@code throttle.client.calls} (counter), tagged {@code client}, {@code policy} and
 * {@code outcome}: {@code sent}, {@code refused} (its policy had no turn within the client's wait) or
 * {@code paused} (the remote's pause lasted longer than the wait); refused and paused calls were
 * never sent;</li>
 * <li>{@code throttle.client.pauses} (counter), tagged {@code client}: responses whose limit headers
 * paused the client's key;</li>
 * <li>{@code throttle.wait} (timer), tagged {@code policy}: a call's wait for a remote's pause to end,
 * in the timer that times the waits for a policy's turn.</li>
 * </ul>
 * Tags are bounded: client and policy names come from configuration, never a key. Thread-safe.
 */
public final class MicrometerOutgoingCallListener implements OutgoingCallListener, MeterBinder {

    /** The outgoing calls counter's name. */
    public static final String CALLS = "throttle.client.calls";

    /** The remote pauses counter's name. */
    public static final String PAUSES = "throttle.client.pauses";

    private final AtomicReference<MeterRegistry[]> registries = new AtomicReference<>(new MeterRegistry[0]);

    @Override
    public void bindTo(MeterRegistry registry) {
        this.registries.updateAndGet((bound) -> {
            MeterRegistry[] more = Arrays.copyOf(bound, bound.length + 1);
            more[bound.length] = registry;
            return more;
        });
    }

    /** A registry finds a meter it has by name and tags; outgoing calls are few next to a network call. */
    @Override
    public void onCall(String client, String policy, Outcome outcome) {
        for (MeterRegistry registry : this.registries.get()) {
            Counter.builder(CALLS)
                    .description("Outgoing calls of throttled clients, sent or not")
                    .tag("client", client)
                    .tag("policy", policy)
                    .tag("outcome", outcome.name().toLowerCase(Locale.ROOT))
                    .register(registry)
                    .increment();
        }
    }

    @Override
    public void onRemotePause(String client, long millis) {
        for (MeterRegistry registry : this.registries.get()) {
            Counter.builder(PAUSES)
                    .description("Responses whose limit headers paused a throttled client's key")
                    .tag("client", client)
                    .register(registry)
                    .increment();
        }
    }

    @Override
    public void onPauseWait(String client, String policy, long millis) {
        for (MeterRegistry registry : this.registries.get()) {
            Timer.builder(MicrometerThrottleListener.WAIT)
                    .description("Time calls over the limit waited for their turn")
                    .tag("policy", policy)
                    .register(registry)
                    .record(millis, TimeUnit.MILLISECONDS);
        }
    }
}
