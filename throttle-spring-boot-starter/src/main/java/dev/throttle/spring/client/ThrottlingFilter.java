package dev.throttle.spring.client;

import dev.throttle.ThrottledException;
import dev.throttle.spring.admission.Admission;
import java.time.Duration;
import java.util.List;
import org.springframework.web.reactive.function.client.ClientRequest;
import org.springframework.web.reactive.function.client.ClientResponse;
import org.springframework.web.reactive.function.client.ExchangeFilterFunction;
import org.springframework.web.reactive.function.client.ExchangeFunction;
import reactor.core.publisher.Mono;

/**
 * Throttles the calls of a {@code WebClient} without blocking: the remote's pause is read and the
 * policy's turn reserved through the store's non-blocking API, and the wait is a {@code Mono.delay}.
 * A call cancelled while it waits for its turn gives the turn back, so that the next caller gets it.
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
            return Mono.fromCompletionStage(() -> client.remainingPauseAsync(key))
                    .flatMap((paused) -> afterPause(client, key, paused))
                    .flatMap((admission) -> send(client, key, admission, request, next));
        });
    }

    private static Mono<Admission> afterPause(OutgoingClient client, String key, long paused) {
        Mono<Long> waited = Mono.just(paused);
        if (paused > 0) {
            if (paused > client.waitMillis()) {
                return Mono.error(client.paused(paused));
            }
            client.pauseWait(paused);
            waited = Mono.delay(Duration.ofMillis(paused)).thenReturn(paused);
        }
        return waited.flatMap((slept) -> Mono.fromCompletionStage(
                        () -> Admission.decideAsync(List.of(client.chargeAfter(slept)), new String[] {key}))
                .onErrorMap(
                        (error) -> error instanceof ThrottledException
                                && !(error instanceof OutgoingCallThrottledException),
                        (error) -> client.refused((ThrottledException) error)));
    }

    private static Mono<ClientResponse> send(
            OutgoingClient client, String key, Admission admission, ClientRequest request, ExchangeFunction next) {
        Duration turn = admission.untilTurn();
        Mono<Long> ready = turn.isZero()
                ? Mono.just(0L)
                // a waiter cancelled before its turn gives the turn back
                : Mono.delay(turn).doOnCancel(admission::refundAsync);
        return ready.then(Mono.fromRunnable(client::sent))
                .then(Mono.defer(() -> next.exchange(request)))
                .flatMap((response) -> {
                    admission.succeededAsync();
                    // handed on once the pause is stored, without blocking
                    return Mono.fromCompletionStage(client.answered(
                                    key,
                                    response.statusCode().value(),
                                    (name) -> response.headers().asHttpHeaders().getFirst(name)))
                            .thenReturn(response);
                })
                .doOnError((error) -> admission.failedAsync());
    }
}
