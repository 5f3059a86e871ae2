package dev.throttle.spring.annotation;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Repeatable;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Throttles calls to a method per key, under a policy configured in
 * {@code throttle.policies.<policy>}. On a class, it applies to each method without a
 * {@code @Throttled} of its own: on a controller to its request-handling methods
 * ({@code @RequestMapping} and its variants), on any other bean to its public methods; never to
 * {@code @InitBinder}, {@code @ModelAttribute} or {@code @ExceptionHandler} methods.
 *
 * <pre class="code">
 * &#64;PostMapping("/api/login")
 * &#64;Throttled(policy = "login", key = "#form.email.trim().toLowerCase()")
 * &#64;Throttled(policy = "login-ip", key = "#ip")
 * public Session login(@RequestBody LoginForm form) { ... }
 * </pre>
 *
 * <p>Several annotations are checked in order; when one refuses, what the earlier ones took is
 * given back, so a refused call is charged nothing. A refusal throws
 * {@link dev.throttle.ThrottledException}, which Spring MVC and WebFlux answer with
 * {@code 429 Too Many Requests}. Annotations on a method replace those on its class.
 *
 * <p>Applied by Spring AOP, so only to calls that come through the bean: a call from inside the
 * method's own class ({@code this.login(..)}) is not throttled, and an annotation on a private,
 * static or final method fails startup.
 */
@Target({ElementType.METHOD, ElementType.TYPE})
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Repeatable(Throttled.List.class)
public @interface Throttled {

    /**
     * The policy's name, as configured under {@code throttle.policies}.
     * @return the policy
     */
    String policy();

    /**
     * A SpEL expression for the key, evaluated per call over the method's parameters
     * ({@code #email}, {@code #form.email}, {@code #p0}, {@code #a0}) and two variables:
     * {@code #ip}, the client address as the servlet container or WebFlux sees it (it follows
     * {@code server.forward-headers-strategy}; a raw {@code X-Forwarded-For} is never read), and
     * {@code #principal}, the authenticated user's name (with Spring Security). IPv6 clients'
     * {@code #ip} is their network ({@code throttle.http.ipv6-prefix}, a /64 by default). Every
     * variable is checked at startup against the method's parameters. A null or blank result, or
     * an expression that fails, falls into the policy's one shared bucket (and is logged once).
     * Empty (the default) means that shared bucket.
     * @return the key expression
     */
    String key() default "";

    /**
     * Units one call takes (tokens, counts, intervals), at least 1.
     * @return the cost
     */
    int cost() default 1;

    /**
     * SpEL for the plan whose numbers the call gets, over the same variables as
     * {@link #key()}, bean references ({@code @accounts.planOf(#apiKey)}) included: a name under
     * {@code throttle.policies.<policy>.plans}. Null, blank or a plan the policy does not have means the
     * policy's base numbers (an unknown name is logged once). Empty (the default): the base numbers.
     * Parsed once, at startup. The key's state is shared by every plan: a caller who changes plan
     * keeps what they used.
     * @return the plan expression, or empty
     */
    String plan() default "";

    /**
     * SpEL for the day of the month the policy's month windows start on for this call (a customer's
     * billing day), over the same variables as {@link #key()}, bean references included: a whole
     * number from 1 to 31, or a date whose day of the month it is ({@code LocalDate},
     * {@code ZonedDateTime}, {@code MonthDay}, ...). So each customer's month runs from their own day
     * (a month shorter than the day starts on its last day), while the policy's other callers keep
     * its {@code anchor-day}. Null, another type or a number outside 1 to 31 means the policy's own
     * (anything but null is logged once). Only for a {@code fixed-window} policy over a calendar
     * month ({@code window: 1M}), checked at startup; under a {@link #plan()}, the plan's month.
     * Parsed once, at startup. A change of a customer's billing day within a month may start their
     * next month at once: change it at a month's boundary.
     * @return the anchor expression, or empty for the policy's {@code anchor-day}
     */
    String anchor() default "";

    /**
     * SpEL for the units the call takes, evaluated per call over the same variables as {@link #key()}
     * ({@code #rows.size()}), in place of {@link #cost()}. A number: below 1 counts as 1; above the
     * policy's largest cost the call is refused as one that can never pass. Null or not a number:
     * {@link #cost()} (logged once). Parsed and checked at startup.
     * @return the cost expression, or empty for {@link #cost()}
     */
    String costExpression() default "";

    /**
     * SpEL for what the call actually cost, known only once it ran (the rows an export returned, the
     * tokens a model used), over {@code #result} and the method's parameters: {@link #cost()} (or
     * {@link #costExpression()}) is the estimate taken before the call, so that concurrent calls
     * cannot all pass on an empty budget, and after it the difference is charged or given back, once.
     * A call that cost more than its key had left puts the key into debt: later calls are refused
     * until the refills pay it back (at most {@code throttle.policies.<policy>.max-debt}, one full
     * quota by default). {@code #result} is the return value, unwrapped from a
     * {@code ResponseEntity} (its body), an {@code Optional}, a {@code CompletionStage} or a
     * {@code Mono}; for a {@code Flux}, the expression is evaluated per element and summed, settled
     * when the stream completes, fails or is cancelled. A call that returned nothing to read (an
     * exception, an empty {@code Optional} or {@code Mono}) keeps its estimate; so does one whose
     * expression fails or gives no number (logged once). A negative number counts as 0. For
     * token-bucket, gcra and fixed-window policies, on every store; checked at startup.
     * @return the actual-cost expression, or empty when the cost is known before the call
     */
    String actualCost() default "";

    /**
     * The longest a call over the limit waits for its turn before it is refused, as a duration
     * ({@code 2s}, {@code 500ms}, {@code PT2S}), over the policy's {@code wait}; {@code 0s} refuses at
     * once. Empty (the default): the policy's {@code wait}. The store reserves the turn up front in one
     * round trip, and the call waits for it: on the calling thread for a method that returns a value,
     * without blocking any thread for one that returns a {@code Mono}, {@code Flux} or
     * {@code CompletionStage}. A turn that would come later is refused at once. For token-bucket, gcra
     * and fixed-window policies; checked at startup.
     * <p>Named {@code maxWait} because an annotation cannot have an element named {@code wait}
     * ({@code Object.wait()} is final).
     * @return the longest wait, or empty for the policy's
     */
    String maxWait() default "";

    /**
     * Holds repeated {@link Throttled} annotations.
     */
    @Target({ElementType.METHOD, ElementType.TYPE})
    @Retention(RetentionPolicy.RUNTIME)
    @Documented
    @interface List {

        /**
         * The annotations, in the order they are checked.
         * @return the annotations
         */
        Throttled[] value();
    }
}
