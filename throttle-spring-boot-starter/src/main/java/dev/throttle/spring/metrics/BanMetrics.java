package dev.throttle.spring.metrics;

import dev.throttle.spring.bans.BanListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The counters {@code throttle.bans.started} (bans started on this instance, by counted refusals or
 * by hand) and {@code throttle.bans.refused} (requests a ban refused on this instance), tagged
 * {@code ban} with the ban's name only: never the key. Registered for every configured ban at once,
 * so that a ban that never fired still shows 0. A {@link MeterBinder}, bound by Spring Boot to the
 * application's registry; thread-safe.
 */
public final class BanMetrics implements BanListener, MeterBinder {

    /** Bans started. */
    public static final String STARTED = "throttle.bans.started";

    /** Requests refused by a ban. */
    public static final String REFUSED = "throttle.bans.refused";

    private final List<String> bans;

    /** The counters of each ban, per registry bound: started then refused. */
    private volatile Map<String, Counter[]> counters = Map.of();

    /**
     * Creates the binder.
     * @param bans the configured bans' names
     */
    public BanMetrics(Collection<String> bans) {
        this.bans = List.copyOf(bans);
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        // bound at startup, one registry after another (Boot binds each binder to each registry once)
        Map<String, Counter[]> counters = new HashMap<>(this.counters);
        for (String ban : this.bans) {
            Counter started = Counter.builder(STARTED)
                    .description("Bans started on this instance")
                    .tag("ban", ban)
                    .register(registry);
            Counter refused = Counter.builder(REFUSED)
                    .description("Requests refused by a ban on this instance")
                    .tag("ban", ban)
                    .register(registry);
            Counter[] held = counters.get(ban);
            counters.put(ban, (held == null) ? new Counter[] {started, refused} : concat(held, started, refused));
        }
        this.counters = Map.copyOf(counters);
    }

    private static Counter[] concat(Counter[] held, Counter started, Counter refused) {
        Counter[] more = new Counter[held.length + 2];
        System.arraycopy(held, 0, more, 0, held.length);
        more[held.length] = started;
        more[held.length + 1] = refused;
        return more;
    }

    @Override
    public void onBanStarted(String ban, Duration length) {
        increment(this.counters.get(ban), 0);
    }

    @Override
    public void onBanRefused(String ban) {
        increment(this.counters.get(ban), 1);
    }

    private static void increment(Counter @Nullable [] counters, int which) {
        if (counters != null) {
            for (int i = which; i < counters.length; i += 2) {
                counters[i].increment();
            }
        }
    }
}
