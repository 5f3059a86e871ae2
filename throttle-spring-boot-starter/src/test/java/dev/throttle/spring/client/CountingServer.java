package dev.throttle.spring.client;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real HTTP server on a free local port that counts the calls reaching it: answers 200 with a
 * small JSON body, or what the next scripted answer says (a 429 with Retry-After, say).
 */
final class CountingServer implements AutoCloseable {

    /** One scripted answer, sent after a delay. */
    record Answer(int status, Map<String, String> headers, long delayMillis) {}

    private final HttpServer server;

    private final AtomicInteger calls = new AtomicInteger();

    private final ExecutorService threads = Executors.newCachedThreadPool();

    private final ConcurrentLinkedQueue<Answer> script = new ConcurrentLinkedQueue<>();

    CountingServer() throws IOException {
        this.server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        this.server.createContext("/", (exchange) -> {
            this.calls.incrementAndGet();
            Answer answer = this.script.poll();
            if (answer != null && answer.delayMillis() > 0) {
                try {
                    Thread.sleep(answer.delayMillis());
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
            }
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
        // each exchange on a thread of its own: a delayed answer holds up no other call
        this.server.setExecutor(this.threads);
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
        thenAnswerAfter(0, status, headers);
    }

    /** The next call is answered so once the delay has passed (then 200 again, at once). */
    void thenAnswerAfter(long delayMillis, int status, Map<String, String> headers) {
        this.script.add(new Answer(status, headers, delayMillis));
    }

    @Override
    public void close() {
        this.server.stop(0);
        this.threads.shutdownNow();
    }
}
