package dev.throttle.spring.client;

import java.util.List;
import org.springframework.web.reactive.function.client.ExchangeFilterFunction;

/**
 * What attaches the throttled outgoing clients to a {@code WebClient}: filter functions that wait for
 * a turn without blocking (the store's non-blocking API, then a {@code Mono.delay}). The starter adds
 * {@link #filter()} once to every {@code WebClient} Spring Boot builds (its {@code WebClient.Builder}
 * beans, and the clients of HTTP service groups on {@code WebClient}); a WebClient built otherwise adds
 * one client's own ({@link #filter(String)}):
 * <pre>{@code
 * WebClient quotes = WebClient.builder()
 *         .baseUrl(url)
 *         .filter(throttledWebClients.filter("quotes"))
 *         .build();
 * }</pre>
 * A bean of its own, apart from {@link ThrottledClients}, so that an application without WebFlux never
 * meets WebFlux's types. Thread-safe.
 */
public final class ThrottledWebClients {

    private final ThrottledClients clients;

    private final ExchangeFilterFunction all;

    /**
     * Creates the filter functions of the clients.
     * @param clients the clients
     */
    public ThrottledWebClients(ThrottledClients clients) {
        this.clients = clients;
        this.all = new ThrottlingFilter(clients.clients(), true);
    }

    /**
     * The filter function that throttles every client's requests, each matched by its URL.
     * @return the filter function
     */
    public ExchangeFilterFunction filter() {
        return this.all;
    }

    /**
     * A filter function that throttles every request of the WebClient it is added to as the named
     * client's, whatever its URL.
     * @param name the client's name
     * @return the filter function
     * @throws IllegalArgumentException when no such client is configured
     */
    public ExchangeFilterFunction filter(String name) {
        return new ThrottlingFilter(List.of(this.clients.client(name)), false);
    }
}
