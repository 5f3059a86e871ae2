package dev.throttle.spring.gateway;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;

/** The service behind the gateway: a JDK HTTP server on a free port that answers every request {@code 200 hello} and counts them. */
final class Backend implements AutoCloseable {

    private final HttpServer server;

    private final AtomicInteger requests = new AtomicInteger();

    private Backend(HttpServer server) {
        this.server = server;
    }

    static Backend start() {
        try {
            HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
            Backend backend = new Backend(server);
            server.createContext("/", (exchange) -> {
                backend.requests.incrementAndGet();
                byte[] body = "hello".getBytes(StandardCharsets.UTF_8);
                exchange.getResponseHeaders().add("Content-Type", "text/plain");
                exchange.sendResponseHeaders(200, body.length);
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(body);
                }
            });
            server.start();
            return backend;
        } catch (IOException ex) {
            throw new IllegalStateException("could not start the backend", ex);
        }
    }

    String url() {
        return "http://127.0.0.1:" + this.server.getAddress().getPort();
    }

    int requests() {
        return this.requests.get();
    }

    @Override
    public void close() {
        this.server.stop(0);
    }
}
