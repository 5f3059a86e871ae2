package dev.throttle.spring.client;

import dev.throttle.spring.admission.Admission;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpRequest;
import org.springframework.http.HttpStatusCode;
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
        if (admission.releasesAtEnd()) {
            // a concurrency slot is held until the body is read and closed: the remote works on the
            // call until then, and RestClient and RestTemplate close every response they read
            response = new EndingResponse(response, admission);
        } else {
            admission.succeeded();
        }
        // the pause is stored before the response is handed on: a call the caller makes next, on any
        // instance, must already see it (bounded by the store's timeout, and never failing)
        ClientHttpResponse answered = response;
        client.answered(
                        key,
                        answered.getStatusCode().value(),
                        (name) -> answered.getHeaders().getFirst(name))
                .toCompletableFuture()
                .join();
        return answered;
    }

    /** A response whose close ends the call that holds a concurrency slot. */
    private static final class EndingResponse implements ClientHttpResponse {

        private final ClientHttpResponse response;

        private final Admission admission;

        private @Nullable InputStream body;

        EndingResponse(ClientHttpResponse response, Admission admission) {
            this.response = response;
            this.admission = admission;
        }

        @Override
        public HttpStatusCode getStatusCode() throws IOException {
            return this.response.getStatusCode();
        }

        @Override
        public String getStatusText() throws IOException {
            return this.response.getStatusText();
        }

        @Override
        public HttpHeaders getHeaders() {
            return this.response.getHeaders();
        }

        @Override
        public InputStream getBody() throws IOException {
            InputStream body = this.body;
            if (body == null) {
                body = new EndingBody(this.response.getBody(), this.admission);
                this.body = body;
            }
            return body;
        }

        @Override
        public void close() {
            try {
                this.response.close();
            } finally {
                this.admission.succeeded();
            }
        }
    }

    /**
     * A body that ends the call when it is read to its end or closed: a caller that takes the body
     * as an {@code InputStream} closes that, and RestClient then never closes the response.
     */
    private static final class EndingBody extends FilterInputStream {

        private final Admission admission;

        EndingBody(InputStream body, Admission admission) {
            super(body);
            this.admission = admission;
        }

        @Override
        public int read() throws IOException {
            int read = super.read();
            if (read < 0) {
                this.admission.succeeded();
            }
            return read;
        }

        @Override
        public int read(byte[] buffer, int offset, int length) throws IOException {
            int read = super.read(buffer, offset, length);
            if (read < 0) {
                this.admission.succeeded();
            }
            return read;
        }

        @Override
        public void close() throws IOException {
            try {
                super.close();
            } finally {
                this.admission.succeeded();
            }
        }
    }
}
