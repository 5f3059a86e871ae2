package dev.throttle.spring.gateway;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Prints a route's mistake as Boot's "Description / Action" block instead of the gateway's stack
 * traces (three of them, some 300 lines, around one line that names the route). Registered in
 * {@code META-INF/spring.factories}.
 */
class ThrottleRouteFailureAnalyzer extends AbstractFailureAnalyzer<ThrottleRouteException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, ThrottleRouteException cause) {
        return new FailureAnalysis(
                "A gateway route cannot be throttled as written:\n\n    - " + cause.getMessage(),
                "Correct the route's RequestRateLimiter arguments (throttle.policy, throttle.plan, throttle.cost): "
                        + "throttle.policy names a policy under throttle.policies.",
                cause);
    }
}
