package dev.throttle.spring.observation;

import dev.throttle.Decision;
import dev.throttle.DecisionObserver;
import dev.throttle.DecisionSource;
import dev.throttle.Policy;
import io.micrometer.common.KeyValue;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;

/**
 * Each decision as the Micrometer observation {@code throttle.decision}, started before the store is
 * asked and stopped when it answered, with the store's call inside its scope: with a tracing bridge,
 * a trace shows the decision as a span and (with Lettuce's tracing) its Redis call within it. Its
 * low-cardinality key values, also the tags of the timer that Micrometer's default handler makes:
 * {@code policy}; {@code outcome}: {@code allowed}, {@code rejected}, or {@code error} when no store
 * could decide (a failure mode's fixed answer, or the store's call failed); {@code store}: who
 * decided ({@code memory}, {@code redis}, {@code local}). Never a key, which is the caller's (an
 * e-mail, an address) and has no place in a trace.
 *
 * <p>Nothing is observed, and a decision costs nothing more, while the registry is a no-op one (no
 * handler). Thread-safe.
 */
public final class ThrottleDecisionObserver implements DecisionObserver {

    /** The observation's name. */
    public static final String NAME = "throttle.decision";

    private static final KeyValue ALLOWED = KeyValue.of("outcome", "allowed");

    private static final KeyValue REJECTED = KeyValue.of("outcome", "rejected");

    private static final KeyValue ERROR = KeyValue.of("outcome", "error");

    private final ObservationRegistry registry;

    /**
     * Creates the observer.
     * @param registry where decisions are observed
     */
    public ThrottleDecisionObserver(ObservationRegistry registry) {
        this.registry = registry;
    }

    @Override
    public boolean isObserving() {
        return !this.registry.isNoop();
    }

    @Override
    public Observed start(Policy policy) {
        Observation observation = Observation.createNotStarted(NAME, this.registry)
                .contextualName(NAME)
                .lowCardinalityKeyValue("policy", policy.name())
                .start();
        return new ObservedDecision(observation);
    }

    private static final class ObservedDecision implements Observed {

        private final Observation observation;

        ObservedDecision(Observation observation) {
            this.observation = observation;
        }

        @Override
        public Scope openScope() {
            Observation.Scope scope = this.observation.openScope();
            return scope::close;
        }

        @Override
        public void decided(Decision decision, DecisionSource source) {
            this.observation
                    .lowCardinalityKeyValue(source.isFailureMode() ? ERROR : decision.allowed() ? ALLOWED : REJECTED)
                    .lowCardinalityKeyValue("store", source.store())
                    .stop();
        }

        @Override
        public void failed(Throwable error, DecisionSource source) {
            this.observation
                    .lowCardinalityKeyValue(ERROR)
                    .lowCardinalityKeyValue("store", source.store())
                    .error(error)
                    .stop();
        }
    }
}
