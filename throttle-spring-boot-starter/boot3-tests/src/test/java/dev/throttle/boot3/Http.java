package dev.throttle.boot3;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;

/**
 * A real HTTP client for the applications under test, and Jackson 2 (Boot 3.5's Jackson) to read
 * their JSON.
 */
final class Http {

    private static final HttpClient client = HttpClient.newHttpClient();

    private static final ObjectMapper json = new ObjectMapper();

    private Http() {}

    static HttpResponse<String> get(int port, String path) throws IOException, InterruptedException {
        return send(port, "GET", path, null);
    }

    static HttpResponse<String> delete(int port, String path) throws IOException, InterruptedException {
        return send(port, "DELETE", path, null);
    }

    static HttpResponse<String> postJson(int port, String path, String body) throws IOException, InterruptedException {
        return send(port, "POST", path, body);
    }

    private static HttpResponse<String> send(int port, String method, String path, String body)
            throws IOException, InterruptedException {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path));
        if (body != null) {
            request.header("Content-Type", "application/json")
                    .method(method, HttpRequest.BodyPublishers.ofString(body));
        } else {
            request.method(method, HttpRequest.BodyPublishers.noBody());
        }
        return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    static Map<String, Object> json(HttpResponse<String> response) throws IOException {
        return json.readValue(response.body(), new TypeReference<Map<String, Object>>() {});
    }
}
