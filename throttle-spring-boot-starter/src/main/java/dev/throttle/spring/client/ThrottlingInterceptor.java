package dev.throttle.spring.client;

import dev.throttle.spring.admission.Admission;
import java.io.IOException;
import java.util.List;
import org.springframework.http.HttpRequest;
import org.springframework.http.client.ClientHttpRequestExecution;
import org.springframework.http.client.ClientHttpRequestInterceptor;
import org.springframework.http.client.ClientHttpResponse;

/**
 * Throttles the calls of a {@code RestClient} or {@code RestTemplate}: a call of a throttled client
 * waits on the calling thread for its turn, then is sent; its response is read for the remote's
 * limits and returned as it came. A call no client throttles passes through untouched.
 */
final class ThrottlingInterceptor implements ClientHttpRequestInterceptor {

    private final List<OutgoingClient> clients;

    /** Whether each request is matched to a client by its URL; false: every request is the one client's. */
    private final boolean byUrl;

    ThrottlingInterceptor(List<OutgoingClient> clients, boolean byUrl) {
        this.clients = clients;
        this.byUrl = byUrl;
    }

    @Override
    public ClientHttpResponse intercept(HttpRequest request, byte[] body, ClientHttpRequestExecution execution)
            throws IOException {
        OutgoingClient client = ThrottledClients.find(this.clients, this.byUrl, request.getURI());
        if (client == null) {
            return execution.execute(request, body);
        }
        String key = client.keyOf(request.getURI(), request.getMethod().name(), request.getHeaders());
        Admission admission = client.admit(key);
        ClientHttpResponse response;
        try {
            response = execution.execute(request, body);
        } catch (IOException | RuntimeException | Error ex) {
            admission.failed();
            throw ex;
        }
        admission.succeeded();
        // the pause is stored before the response is handed on: a call the caller makes next, on any
        // instance, must already see it (bounded by the store's timeout, and never failing)
        client.answered(
                        key,
                        response.getStatusCode().value(),
                        (name) -> response.getHeaders().getFirst(name))
                .toCompletableFuture()
                .join();
        return response;
    }
}
