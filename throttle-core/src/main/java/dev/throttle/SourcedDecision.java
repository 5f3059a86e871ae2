package dev.throttle;

import java.util.Objects;

/**
 * A decision and who made it: what a {@link SourcedLimiter} answers.
 *
 * @param decision the decision
 * @param source who made it
 */
public record SourcedDecision(Decision decision, DecisionSource source) {

    /**
     * Creates the pair.
     * @param decision the decision
     * @param source who made it
     */
    public SourcedDecision {
        Objects.requireNonNull(decision, "decision");
        Objects.requireNonNull(source, "source");
    }
}
