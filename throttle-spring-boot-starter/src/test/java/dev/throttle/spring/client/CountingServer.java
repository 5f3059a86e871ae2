package dev.throttle.spring.client;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real HTTP server on a free local port that counts the calls reaching it: answers 200 with a
 * small JSON body, or what the next scripted answer says (a 429 with Retry-After, say).
 */
final class CountingServer implements AutoCloseable {

    /** One scripted answer. */
    record Answer(int status, Map<String, String> headers) {}

    private final HttpServer server;

    private final AtomicInteger calls = new AtomicInteger();

    private final ConcurrentLinkedQueue<Answer> script = new ConcurrentLinkedQueue<>();

    CountingServer() throws IOException {
        this.server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        this.server.createContext("/", (exchange) -> {
            this.calls.incrementAndGet();
            Answer answer = this.script.poll();
            int status = (answer != null) ? answer.status() : 200;
            if (answer != null) {
                answer.headers()
                        .forEach((name, value) -> exchange.getResponseHeaders().add(name, value));
            }
            byte[] body = ("{\"status\":" + status + "}").getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(status, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        this.server.start();
    }

    /** The server's base URL, such as {@code http://127.0.0.1:54321}. */
    String url() {
        return "http://" + this.server.getAddress().getAddress().getHostAddress() + ":"
                + this.server.getAddress().getPort();
    }

    int calls() {
        return this.calls.get();
    }

    /** The next call is answered so (then 200 again). */
    void thenAnswer(int status, Map<String, String> headers) {
        this.script.add(new Answer(status, headers));
    }

    @Override
    public void close() {
        this.server.stop(0);
    }
}
