package dev.throttle.spring.web;

import dev.throttle.ThrottledException;
import dev.throttle.spring.client.OutgoingCallThrottledException;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;

/**
 * Decides how a {@link ThrottledException} is answered over HTTP: by default {@code 429 Too Many
 * Requests}, {@code Retry-After} in whole seconds rounded up, the rate-limit headers, and an
 * {@code application/problem+json} body whose {@code violated-policies} names the policy (or, for a
 * browser that asks for HTML and not JSON, the application's error page with that status).
 *
 * <p>The one place to change that answer: every entry point ({@code @Throttled} methods, URL rules,
 * Spring Security logins, a {@code Throttler.check} in a controller) asks it for the
 * {@link Refusal} it renders, on Spring MVC and WebFlux alike. Override {@link #status},
 * {@link #detail} or {@link #refusal} (to add a member with {@link Refusal#withProperty}) in a
 * subclass and declare it as a bean to replace the starter's. An application's own {@code @ExceptionHandler(ThrottledException.class)} still takes
 * precedence where it applies (a refusal raised by a handler).
 */
public class ThrottleExceptionHandler {

    /** The problem type of a refusal (RFC 9457 registry). */
    public static final URI QUOTA_EXCEEDED =
            URI.create("https://iana.org/assignments/http-problem-types#quota-exceeded");

    private final boolean writeRateLimitHeaders;

    /**
     * Creates a handler.
     * @param writeRateLimitHeaders whether to send RateLimit-Policy and RateLimit
     */
    public ThrottleExceptionHandler(boolean writeRateLimitHeaders) {
        this.writeRateLimitHeaders = writeRateLimitHeaders;
    }

    /**
     * Builds the answer to a refusal, once per refused call.
     * @param ex the refusal
     * @return what the response says
     */
    public Refusal refusal(ThrottledException ex) {
        // the rate-limit fields would describe the dependency's limit as if it were the caller's
        boolean headers = this.writeRateLimitHeaders && !(ex instanceof OutgoingCallThrottledException);
        return Refusal.of(ex.getPolicy(), ex.getDecision(), headers, status(ex), detail(ex));
    }

    /**
     * The response status.
     * @param ex the refusal
     * @return {@code 429 Too Many Requests}; {@code 503 Service Unavailable} for an outgoing call
     * that could not be sent in time ({@link OutgoingCallThrottledException}: the application's
     * dependency is busy, the caller did nothing wrong)
     */
    protected HttpStatusCode status(ThrottledException ex) {
        if (ex instanceof OutgoingCallThrottledException) {
            return HttpStatus.SERVICE_UNAVAILABLE;
        }
        return HttpStatus.TOO_MANY_REQUESTS;
    }

    /**
     * The problem's {@code detail}: says which policy refused and for how long, never the key.
     * @param ex the refusal
     * @return the detail
     */
    protected String detail(ThrottledException ex) {
        if (ex instanceof OutgoingCallThrottledException outgoing) {
            long seconds = Math.max(1, ex.getDecision().retryAfterSeconds());
            return "A service this application depends on is busy (client '" + outgoing.getClient() + "'); retry after "
                    + seconds + ((seconds == 1) ? " second." : " seconds.");
        }
        return Refusal.defaultDetail(ex.getPolicy(), ex.getDecision());
    }

    /**
     * Builds the answer to a request refused by a temporary ban ({@code throttle.bans}), before
     * anything else ran: no policy decided it, so it names the ban instead ({@code "ban"} member) and
     * carries no rate-limit headers; {@code Retry-After} is the ban's remaining time.
     * @param ban the ban's name
     * @param remaining how long the ban has left
     * @param status the ban's status: 429, or 403 when it says so
     * @return what the response says
     */
    public Refusal banned(String ban, Duration remaining, HttpStatusCode status) {
        long seconds = Math.max(1, (remaining.toMillis() + 999) / 1000);
        String detail = "Requests from this client are refused for " + seconds
                + ((seconds == 1) ? " more second" : " more seconds") + " (ban '" + ban + "').";
        return new Refusal(
                List.of(), List.of(), OptionalLong.of(seconds), null, null, status, detail, Map.of("ban", ban));
    }

    /**
     * The refusal as a response entity, for an application's own exception handler that wants the
     * standard answer (the starter's own handlers render {@link #refusal} directly).
     * @param ex the refusal
     * @return the response
     */
    public ResponseEntity<ProblemDetail> handleThrottled(ThrottledException ex) {
        Refusal refusal = refusal(ex);
        HttpHeaders headers = new HttpHeaders();
        refusal.retryAfterSeconds()
                .ifPresent((seconds) -> headers.set(HttpHeaders.RETRY_AFTER, Long.toString(seconds)));
        if (refusal.rateLimit() != null) {
            headers.set(RateLimitHeaders.POLICY, refusal.rateLimitPolicy());
            headers.set(RateLimitHeaders.LIMIT, refusal.rateLimit());
        }
        // the builder, not a constructor: its signatures are the same on Spring Framework 6 and 7
        return ResponseEntity.status(refusal.status())
                .headers(headers)
                .contentType(MediaType.APPLICATION_PROBLEM_JSON)
                .body(refusal.problem(null));
    }
}
