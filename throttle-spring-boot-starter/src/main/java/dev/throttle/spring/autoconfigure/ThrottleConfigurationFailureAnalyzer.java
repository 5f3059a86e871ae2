package dev.throttle.spring.autoconfigure;

import dev.throttle.spring.ThrottleConfigurationException;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Prints a {@link ThrottleConfigurationException} as Boot's "Description / Action" block, one line
 * per mistake, instead of a stack trace: the mistakes are the user's, not the code's. Registered in
 * {@code META-INF/spring.factories}, where Spring Boot 3 and 4 alike look for failure analyzers.
 */
class ThrottleConfigurationFailureAnalyzer extends AbstractFailureAnalyzer<ThrottleConfigurationException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, ThrottleConfigurationException cause) {
        int count = cause.problems().size();
        StringBuilder description = new StringBuilder("Throttling is configured in a way that cannot work");
        description
                .append((count == 1) ? ":" : " (" + count + " mistakes, all found in this start):")
                .append("\n");
        for (String problem : cause.problems()) {
            description.append("\n    - ").append(problem);
        }
        String action = "Correct "
                + ((count == 1)
                        ? "the throttle.* property or @Throttled annotation above"
                        : "each throttle.* property and @Throttled annotation above")
                + ". Policies are set under throttle.policies.<name>, and the parameters a policy takes depend on "
                + "its algorithm; @Throttled(policy) must name one of them. Every mistake this start found is "
                + "listed, so the next start checks all the fixes.";
        return new FailureAnalysis(description.toString(), action, cause);
    }
}
