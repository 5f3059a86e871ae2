package dev.throttle.spring.internal.aop;

import dev.throttle.spring.admission.Admission;
import dev.throttle.spring.internal.request.ReactiveThrottleRequestContext;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.springframework.core.ReactiveAdapter;
import org.springframework.http.ResponseEntity;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Throttles methods that return a deferred reactive type (Mono, Flux, any Publisher, or another
 * library's type that Spring's ReactiveAdapterRegistry adapts, such as RxJava's Single): nothing
 * happens until subscription; then the keys are evaluated against the request found then, the
 * decisions are made through the store's non-blocking API (never blocking an event-loop thread),
 * the method is called only if every policy allowed it, and the call is settled when the
 * publisher's outcome is known (a single value, or completion without a failed value); an error or a
 * cancelled subscription (a client gone) ends it as failed, which releases a concurrency slot. Also
 * follows a reactive value that a call already throttled returned. The steps themselves are
 * {@link dev.throttle.spring.admission.Admission}'s. Loaded only when Reactor is on the classpath.
 */
final class ReactiveThrottling {

    private ReactiveThrottling() {}

    /**
     * Throttles a reactive call.
     * @param throttled the method's throttles and keys
     * @param arguments the call's arguments
     * @param requests finds the request in the subscriber's context (WebFlux), or null
     * @param bound the request the call was made in (Spring MVC), used when {@code requests} is null
     * @param early what a decision before the handler's arguments were bound took (Spring MVC), or null
     * @param call runs the call and returns its publisher
     * @return a value of the type the method declares
     */
    static Object throttle(
            ThrottledMethod throttled,
            Object[] arguments,
            @Nullable ReactiveThrottleRequestContext requests,
            @Nullable ThrottleRequestContext bound,
            @Nullable Admitted early,
            Call call) {
        ReactiveAdapter adapter = throttled.plan().adapter();
        Mono<ThrottleRequestContext> request =
                (requests != null) ? Mono.deferContextual(requests::current) : Mono.just(bound);
        Mono<Admitted> decided = (early != null)
                ? Mono.just(early)
                : request.flatMap((context) -> {
                    if (context.safelisted()) {
                        return Mono.just(Admitted.NOTHING);
                    }
                    // decided before the handler's arguments were resolved (EarlyDecisions): charged once, settled here
                    Admitted claimed = EarlyDecisions.claim(throttled, context);
                    if (claimed != null) {
                        return Mono.just(claimed);
                    }
                    ThrottledMethod.Call charged = throttled.call(arguments, context);
                    return admitted(context, charged);
                });
        Mono<Admitted> acquired =
                decided.map((taken) -> throttled.metered(taken, arguments)).flatMap(ReactiveThrottling::turn);
        Publisher<Object> result;
        if (throttled.many()) {
            result = acquired.flatMapMany((taken) -> {
                Publisher<Object> source = proceed(call, adapter);
                if (!throttled.settles() || taken == Admitted.NOTHING) {
                    return source;
                }
                // a Publisher that turns out to be a Mono settles on its value, before emitting it: a
                // caller's Mono.from(..) cancels after the first value and would never see completion
                return (source instanceof Mono<Object> one)
                        ? settledOnValue(one, taken)
                        : settledOnCompletion(Flux.from(source), taken);
            });
        } else if (!throttled.settles()) {
            result = acquired.flatMap((taken) -> Mono.from(proceed(call, adapter)));
        } else {
            result = acquired.flatMap((taken) -> (taken == Admitted.NOTHING)
                    ? Mono.from(proceed(call, adapter))
                    : settledOnValue(Mono.from(proceed(call, adapter)), taken));
        }
        // an admission that any step of the call discards (a subscriber gone before it asked for
        // anything, wherever the admission was held then) is given back: held by no one, a
        // concurrency slot would stay taken for its lease
        Publisher<Object> guarded = (result instanceof Mono<Object> one)
                ? one.doOnDiscard(Admitted.class, ReactiveThrottling::giveBack)
                : Flux.from(result).doOnDiscard(Admitted.class, ReactiveThrottling::giveBack);
        return (adapter != null) ? adapter.fromPublisher(guarded) : guarded;
    }

    private static void giveBack(Admitted taken) {
        taken.admission().refundAsync();
    }

    /**
     * The call's admission, handed on only to a subscriber still there. One that cancels while the
     * store decides stops the decision (what it took goes back, a wait for a slot ends); one that
     * cancels after, before it asked for the admission (a client gone before the response was
     * written), has it given back: held by no one, a concurrency slot would stay taken for its lease.
     */
    private static Mono<Admitted> admitted(ThrottleRequestContext context, ThrottledMethod.Call charged) {
        return Mono.<Admitted>create((sink) -> {
            CompletableFuture<Admission> admitting =
                    context.admitAsync(charged.charges(), charged.keys()).toCompletableFuture();
            AtomicBoolean gone = new AtomicBoolean();
            sink.onCancel(() -> {
                gone.set(true);
                admitting.cancel(false);
            });
            admitting.whenComplete((admission, error) -> {
                if (error == null) {
                    // a sink already cancelled discards the value, which the call's discard hook gives back
                    sink.success(Admitted.of(admission, context));
                } else if (!gone.get() && !(error instanceof CancellationException)) {
                    // nobody to tell once the subscriber left: Reactor would log the error it drops
                    sink.error(
                            (error instanceof CompletionException && error.getCause() != null)
                                    ? error.getCause()
                                    : error);
                }
            });
        });
    }

    /**
     * Whether a throttled call of a method that declares {@code declared} can be handed back: what
     * the plan's adapter makes from a publisher must be one.
     * @param declared the method's return type
     * @param plan the method's plan, with an adapter
     * @return whether the adapter's value is a {@code declared}
     */
    static boolean handsBack(Class<?> declared, ReturnTypes.Plan plan) {
        Publisher<Object> empty = plan.many() ? Flux.empty() : Mono.empty();
        return declared.isInstance(plan.adapter().fromPublisher(empty));
    }

    /**
     * A call whose policy made it wait: delayed on Reactor's timer until its turn, never blocking a
     * thread; a subscriber that cancels meanwhile (a client gone, a timeout) gives the turn back.
     */
    private static Mono<Admitted> turn(Admitted taken) {
        long wait = taken.admission().waitMillis();
        if (wait == 0) {
            return Mono.just(taken);
        }
        return Mono.delay(Duration.ofMillis(wait))
                .thenReturn(taken)
                .doOnCancel(() -> taken.admission().refundAsync());
    }

    /**
     * Follows a reactive value that an already throttled call returned (its units are taken) to its
     * outcome, and settles a success then.
     * @param value the value, of a type {@code adapter} knows
     * @param adapter converts the value to and from a publisher
     * @param taken what the call took
     * @return a value of the same type, whose outcome settles the call
     */
    static Object follow(Object value, ReactiveAdapter adapter, Admitted taken) {
        Publisher<Object> source = adapter.toPublisher(value);
        Publisher<Object> settled = adapter.isMultiValue()
                ? settledOnCompletion(Flux.from(source), taken)
                : settledOnValue(Mono.from(source), taken);
        return adapter.fromPublisher(settled);
    }

    /**
     * A single value is a success unless it is a failed ResponseEntity; so is completing empty. A
     * ResponseEntity whose body is reactive (a {@code Mono<ResponseEntity<Flux<T>>>}, a suspending
     * function's {@code ResponseEntity<Mono<T>>}) is no outcome yet: its status is set before the body
     * runs, so the call is settled by the body's outcome.
     */
    private static Mono<Object> settledOnValue(Mono<Object> value, Admitted taken) {
        return value.flatMap((emitted) -> {
                    Object followed = ReturnTypes.isEntity(emitted) ? Entities.followBody(emitted, taken) : null;
                    if (followed != null) {
                        return Mono.just(followed);
                    }
                    taken.read(emitted);
                    return (ReturnTypes.isFailure(emitted) || answeredWithError(taken))
                            ? failed(taken).thenReturn(emitted)
                            : settled(taken).thenReturn(emitted);
                })
                .switchIfEmpty(Mono.defer(() -> answeredWithError(taken) ? failed(taken) : settled(taken)))
                .onErrorResume((error) -> failed(taken).then(Mono.error(error)))
                .doOnCancel(taken::failedAsync);
    }

    /** Many values are a success when they complete and none was a failed ResponseEntity. */
    private static Flux<Object> settledOnCompletion(Flux<Object> values, Admitted taken) {
        return Flux.defer(() -> {
            boolean[] failed = new boolean[1];
            return values.doOnNext((emitted) -> {
                        taken.read(emitted);
                        failed[0] |= ReturnTypes.isFailure(emitted);
                    })
                    .concatWith(
                            Mono.defer(() -> (failed[0] || answeredWithError(taken)) ? failed(taken) : settled(taken)))
                    .onErrorResume((error) -> failed(taken).then(Mono.error(error)))
                    .doOnCancel(taken::failedAsync);
        });
    }

    /**
     * Whether the call answered by setting its response's status to an error (a WebFlux handler
     * that sets 401 on the exchange and completes empty): a failure, whatever it emitted.
     */
    private static boolean answeredWithError(Admitted taken) {
        return taken.request().responseStatus() >= 400;
    }

    /** Settles a success when subscribed; completes empty, and never fails (see {@link dev.throttle.spring.admission.Admission}). */
    private static <T> Mono<T> settled(Admitted taken) {
        // never cancelled: a settlement under way finishes (and a JDK stage may refuse a cancel, an error Reactor logs)
        return Mono.fromFuture(() -> taken.succeededAsync().toCompletableFuture(), true)
                .then(Mono.empty());
    }

    /**
     * Ends a call that failed when subscribed (releasing its concurrency slots; nothing else);
     * completes empty, and never fails.
     */
    private static <T> Mono<T> failed(Admitted taken) {
        return Mono.fromFuture(() -> taken.failedAsync().toCompletableFuture(), true)
                .then(Mono.empty());
    }

    @SuppressWarnings("unchecked")
    private static Publisher<Object> proceed(Call call, ReactiveAdapter adapter) {
        try {
            Object result = call.proceed();
            if (result == null) {
                return Mono.empty();
            }
            return (adapter != null) ? adapter.toPublisher(result) : (Publisher<Object>) result;
        } catch (Throwable ex) {
            return Mono.error(ex);
        }
    }

    /** Kept apart so that this class loads without Spring Web. */
    private static final class Entities {

        /**
         * The entity with its body followed, when its status is no error and its body is reactive;
         * else null (the entity is the outcome).
         */
        static @Nullable Object followBody(Object value, Admitted taken) {
            ResponseEntity<?> entity = (ResponseEntity<?>) value;
            Object body = entity.getBody();
            if (entity.getStatusCode().isError() || body == null) {
                return null;
            }
            ReactiveAdapter adapter = ReturnTypes.adapterFor(body.getClass());
            if (adapter == null) {
                return null;
            }
            // the body that settles the call may never end (a conditional request answered 304 never
            // reads it; a client gone between the entity and its body may leave it read and never ended
            // nor cancelled): the end of the request ends the call then, and is a no-op for one the body
            // ended already
            taken.request().atEnd(taken::failedAsync);
            return Outcomes.Entities.withBody(entity, follow(body, adapter, taken));
        }
    }

    /**
     * Runs a throttled call: a method invocation's {@code proceed}, or any step that returns the
     * call's publisher.
     */
    @FunctionalInterface
    interface Call {

        /**
         * Runs the call.
         * @return the call's publisher, or a value of a type the method's adapter knows (null counts as empty)
         * @throws Throwable what the call threw
         */
        Object proceed() throws Throwable;
    }
}
