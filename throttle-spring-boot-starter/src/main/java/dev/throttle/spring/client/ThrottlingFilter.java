package dev.throttle.spring.client;

import dev.throttle.ThrottledException;
import dev.throttle.spring.admission.Admission;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.springframework.web.reactive.function.client.ClientRequest;
import org.springframework.web.reactive.function.client.ClientResponse;
import org.springframework.web.reactive.function.client.ExchangeFilterFunction;
import org.springframework.web.reactive.function.client.ExchangeFunction;
import reactor.core.publisher.Mono;

/**
 * Throttles the calls of a {@code WebClient} without blocking: the remote's pause is read and the
 * policy's turn reserved through the store's non-blocking API, and the wait is a {@code Mono.delay}.
 * A call cancelled while it waits for its turn gives the turn back, so that the next caller gets it;
 * a call cancelled while it is exchanged ends there. A call that holds a concurrency slot holds it
 * until its response's body is consumed or released, as the remote still works on it until then.
 */
final class ThrottlingFilter implements ExchangeFilterFunction {

    private final List<OutgoingClient> clients;

    /** Whether each request is matched to a client by its URL; false: every request is the one client's. */
    private final boolean byUrl;

    ThrottlingFilter(List<OutgoingClient> clients, boolean byUrl) {
        this.clients = clients;
        this.byUrl = byUrl;
    }

    @Override
    public Mono<ClientResponse> filter(ClientRequest request, ExchangeFunction next) {
        OutgoingClient client = ThrottledClients.find(this.clients, this.byUrl, request.url());
        if (client == null) {
            return next.exchange(request);
        }
        return Mono.defer(() -> {
            String key = client.keyOf(request.url(), request.method().name(), request.headers());
            return admitted(client, key, 0).flatMap((admission) -> send(client, key, admission, request, next));
        });
    }

    /**
     * The call's admission once it may be sent: after a pause the remote asked for, then after the
     * policy's turn, both within the client's wait ({@code waited} of it spent already).
     */
    private static Mono<Admission> admitted(OutgoingClient client, String key, long waited) {
        return stage(client.remainingPauseAsync(key)).flatMap((paused) -> {
            Mono<Long> slept = Mono.just(0L);
            if (paused > 0) {
                if (waited + paused > client.waitMillis()) {
                    return Mono.error(client.paused(paused));
                }
                client.pauseWait(paused);
                slept = Mono.delay(Duration.ofMillis(paused));
            }
            long afterPause = waited + Math.max(0, paused);
            return slept.then(Mono.defer(() -> {
                long started = System.nanoTime();
                // a wait for a concurrency slot happens here, a wait for a rate policy's turn in atTurn
                return Mono.fromCompletionStage(() ->
                                Admission.decideAsync(List.of(client.chargeAfter(afterPause)), new String[] {key}))
                        .onErrorMap(
                                (error) -> error instanceof ThrottledException
                                        && !(error instanceof OutgoingCallThrottledException),
                                (error) -> client.refused((ThrottledException) error))
                        .flatMap((admission) -> atTurn(client, key, admission, afterPause, started));
            }));
        });
    }

    /**
     * Waits for the call's turn. A pause the remote asked for while the call waited (for its turn or
     * its slot) holds it too: what it took goes back and the call waits for the pause, within what
     * is left of its wait.
     */
    private static Mono<Admission> atTurn(
            OutgoingClient client, String key, Admission admission, long waited, long startedNanos) {
        Duration turn = admission.untilTurn();
        Mono<Admission> ready =
                turn.isZero() ? Mono.just(admission) : Mono.delay(turn).thenReturn(admission);
        boolean waitedForSlot =
                admission.releasesAtEnd() && TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedNanos) > 0;
        if (client.honorsRemoteLimits() && (!turn.isZero() || waitedForSlot)) {
            ready = ready.flatMap((ignored) -> stage(client.remainingPauseAsync(key))
                    .flatMap((paused) -> (paused <= 0)
                            ? Mono.just(admission)
                            : stage(admission.refundAsync())
                                    .then(Mono.defer(() -> admitted(
                                            client,
                                            key,
                                            waited
                                                    + TimeUnit.NANOSECONDS.toMillis(
                                                            System.nanoTime() - startedNanos))))));
        }
        // a waiter cancelled before it is sent gives its turn back
        return ready.doOnCancel(admission::refundAsync);
    }

    private static Mono<ClientResponse> send(
            OutgoingClient client, String key, Admission admission, ClientRequest request, ExchangeFunction next) {
        return Mono.fromRunnable(client::sent)
                .then(Mono.defer(() -> next.exchange(request)))
                .flatMap((response) -> {
                    ClientResponse handed = response;
                    if (admission.releasesAtEnd()) {
                        handed = response.mutate()
                                // ended before the body's end reaches its reader (doFinally would end it
                                // after): a call made once the body is read finds the slot free
                                .body((body) -> body.doOnComplete(admission::succeededAsync)
                                        .doOnError((error) -> admission.failedAsync())
                                        .doOnCancel(admission::failedAsync))
                                .build();
                    } else {
                        admission.succeededAsync();
                    }
                    // handed on once the pause is stored, without blocking
                    return stage(client.answered(
                                    key,
                                    response.statusCode().value(),
                                    (name) -> response.headers().asHttpHeaders().getFirst(name)))
                            .thenReturn(handed);
                })
                .doOnError((error) -> admission.failedAsync())
                // a caller that stops waiting while the call is exchanged (a timeout of its own) ends it
                .doOnCancel(admission::failedAsync);
    }

    /** A stage of the store's, which a cancelled subscriber leaves alone (it may be no future at all). */
    private static <T> Mono<T> stage(CompletionStage<T> stage) {
        return Mono.fromFuture(stage.toCompletableFuture(), true);
    }
}
