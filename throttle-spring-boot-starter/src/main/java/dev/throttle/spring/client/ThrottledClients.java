package dev.throttle.spring.client;

import dev.throttle.BoundPolicy;
import dev.throttle.TimeSource;
import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.admission.Charge;
import dev.throttle.spring.admission.ExpressionReads;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.http.client.ClientHttpRequestInterceptor;

/**
 * The throttled outgoing clients ({@code throttle.clients}), and what attaches them to a
 * {@code RestClient} or {@code RestTemplate}: an interceptor ({@link ThrottledWebClients} has the
 * filter functions of a {@code WebClient}). The starter adds {@link #interceptor()} (every client,
 * each request matched by its URL) to the builders Spring Boot gives the application; a client built
 * without them, or whose requests no base URL or host describes, gets one client's own
 * ({@link #interceptor(String)}) explicitly:
 * <pre>{@code
 * RestClient quotes = RestClient.builder()
 *         .baseUrl(url)
 *         .requestInterceptor(throttledClients.interceptor("quotes"))
 *         .build();
 * }</pre>
 * Every client is checked when this is made: a mistake fails the start, naming the property.
 * Thread-safe.
 */
public final class ThrottledClients {

    /** The variables a client's key may read. */
    private static final Set<String> KEY_VARIABLES = Set.of("uri", "method", "headers");

    /**
     * One client, as configured under {@code throttle.clients.<name>}.
     * @param name the client's name
     * @param baseUrl requests under this URL are the client's; null when only hosts say
     * @param hosts requests to these hosts (a name, or name:port) are the client's
     * @param policy the policy that paces the calls
     * @param key empty for the request's host, or a SpEL expression over {@code #uri}, {@code #method}
     * and {@code #headers}
     * @param maxWait the longest a call waits for its turn; null for the policy's own
     * @param honorRemoteLimits whether a remote's limits pause the key
     */
    public record Definition(
            String name,
            @Nullable String baseUrl,
            List<String> hosts,
            @Nullable String policy,
            @Nullable String key,
            @Nullable Duration maxWait,
            boolean honorRemoteLimits) {}

    private final List<OutgoingClient> clients;

    private final Map<String, OutgoingClient> byName = new LinkedHashMap<>();

    private final ThrottlingInterceptor interceptor;

    /**
     * Makes and checks the clients.
     * @param definitions the clients, in the order requests are matched
     * @param admissions the charges of the configured policies
     * @param pauses where remote pauses are kept
     * @param listener hears the calls (metrics)
     * @param clock the application's clock
     * @throws IllegalArgumentException naming the client's property that is wrong
     */
    public ThrottledClients(
            List<Definition> definitions,
            Admissions admissions,
            RemotePauses pauses,
            OutgoingCallListener listener,
            TimeSource clock) {
        List<OutgoingClient> made = new ArrayList<>();
        SpelExpressionParser parser = new SpelExpressionParser();
        for (Definition definition : definitions) {
            OutgoingClient client = make(definition, admissions, pauses, listener, clock, parser);
            made.add(client);
            this.byName.put(definition.name(), client);
        }
        this.clients = List.copyOf(made);
        this.interceptor = new ThrottlingInterceptor(this.clients, true);
    }

    private static OutgoingClient make(
            Definition definition,
            Admissions admissions,
            RemotePauses pauses,
            OutgoingCallListener listener,
            TimeSource clock,
            SpelExpressionParser parser) {
        URI base = null;
        String baseUrl = definition.baseUrl();
        if (baseUrl != null && !baseUrl.isBlank()) {
            try {
                base = new URI(baseUrl.trim());
            } catch (URISyntaxException ex) {
                throw new IllegalArgumentException(
                        "base-url is '" + baseUrl + "', which is no URL: " + ex.getMessage());
            }
            if (base.getScheme() == null || base.getHost() == null) {
                throw new IllegalArgumentException(
                        "base-url is '" + baseUrl + "', which is no absolute URL (such as https://api.example.com)");
            }
        }
        Set<String> hosts = new LinkedHashSet<>();
        for (String host : definition.hosts()) {
            if (host != null && !host.isBlank()) {
                // written as requests are compared: lower case, no trailing dot before the port
                hosts.add(host.trim().toLowerCase(Locale.ROOT).replaceFirst("\\.+(?=$|:\\d+$)", ""));
            }
        }
        if (base == null && hosts.isEmpty()) {
            throw new IllegalArgumentException(
                    "neither base-url nor hosts is set: say which requests are this client's");
        }
        String policy = definition.policy();
        if (policy == null || policy.isBlank()) {
            throw new IllegalArgumentException("policy is not set: name a policy under throttle.policies");
        }
        Charge charge;
        try {
            charge = admissions.charge(policy.trim());
        } catch (IllegalArgumentException ex) {
            throw new IllegalArgumentException(
                    "policy is '" + policy + "', but no such policy is configured under throttle.policies");
        }
        Duration wait = definition.maxWait();
        if (wait != null) {
            if (wait.isNegative()) {
                throw new IllegalArgumentException("wait is " + wait + ", which is negative");
            }
            String why = wait.isZero() ? null : BoundPolicy.whyNoWait(charge.policy());
            if (why != null) {
                throw new IllegalArgumentException(
                        "wait is " + wait + ", but policy '" + policy + "' cannot wait for a turn: " + why);
            }
            charge = charge.withWait(wait);
        }
        Expression key = null;
        String keySource = definition.key();
        if (keySource != null && !keySource.isBlank()) {
            try {
                key = parser.parseExpression(keySource);
            } catch (ParseException ex) {
                throw new IllegalArgumentException(
                        "key is '" + keySource + "', which does not parse: " + ex.getMessage());
            }
            // a variable a request does not have is null, and a name without its # fails, on every call
            for (String name : ExpressionReads.variables(key)) {
                if (!KEY_VARIABLES.contains(name)) {
                    throw new IllegalArgumentException("key is '" + keySource + "', which names #" + name
                            + ", which an outgoing request does not have, so every call would share one key: "
                            + "use #uri, #method or #headers");
                }
            }
            String rootRead = ExpressionReads.first(key);
            if (rootRead != null) {
                throw new IllegalArgumentException("key is '" + keySource + "', which reads '" + rootRead
                        + "' from the root object, which an outgoing request's key does not have, so every call "
                        + "would fail: a variable is written with # (#uri, #method or #headers)");
            }
        }
        return new OutgoingClient(
                definition.name(), base, hosts, charge, key, definition.honorRemoteLimits(), pauses, listener, clock);
    }

    /**
     * The client of a request: the first whose base URL or hosts describe its URL (null when none
     * does), or, for an interceptor or filter attached to one client, that client whatever the URL.
     */
    static @Nullable OutgoingClient find(List<OutgoingClient> clients, boolean byUrl, URI url) {
        if (!byUrl) {
            return clients.get(0);
        }
        for (int i = 0; i < clients.size(); i++) {
            OutgoingClient client = clients.get(i);
            if (client.matches(url)) {
                return client;
            }
        }
        return null;
    }

    /**
     * Returns the names of the clients.
     * @return the names, in configuration order
     */
    public Set<String> names() {
        return this.byName.keySet();
    }

    /**
     * Whether any client is configured.
     * @return whether there is none
     */
    public boolean isEmpty() {
        return this.clients.isEmpty();
    }

    /**
     * The interceptor that throttles every client's requests, each matched by its URL: what the
     * starter adds to the {@code RestClient} and {@code RestTemplate} builders.
     * @return the interceptor
     */
    public ClientHttpRequestInterceptor interceptor() {
        return this.interceptor;
    }

    /**
     * An interceptor that throttles every request of the HTTP client it is added to as the named
     * client's, whatever its URL.
     * @param name the client's name
     * @return the interceptor
     * @throws IllegalArgumentException when no such client is configured
     */
    public ClientHttpRequestInterceptor interceptor(String name) {
        return new ThrottlingInterceptor(List.of(client(name)), false);
    }

    /** The clients, in matching order. */
    List<OutgoingClient> clients() {
        return this.clients;
    }

    OutgoingClient client(String name) {
        OutgoingClient client = this.byName.get(name);
        if (client == null) {
            throw new IllegalArgumentException(
                    "No client '" + name + "' is configured under throttle.clients; known: " + this.byName.keySet());
        }
        return client;
    }
}
