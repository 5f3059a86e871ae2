package dev.throttle.spring.security;

import java.net.CookieManager;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * A real HTTP client for the login tests: form posts and HTTP Basic, no redirects followed, one
 * cookie jar per client (so a form login's session carries on to the next request).
 */
final class LoginClient {

    private final HttpClient client =
            HttpClient.newBuilder().cookieHandler(new CookieManager()).build();

    private final int port;

    LoginClient(int port) {
        this.port = port;
    }

    HttpResponse<String> formLogin(String username, String password, String... headers) throws Exception {
        String body = "username=" + encode(username) + "&password=" + encode(password);
        return send(request("/login", headers)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(body)));
    }

    /**
     * Opens the login page, then posts the form with the CSRF token the page carries.
     */
    HttpResponse<String> formLoginWithCsrf(String username, String password, String... headers) throws Exception {
        java.util.regex.Matcher token = java.util.regex.Pattern.compile("name=\"_csrf\"[^>]*value=\"([^\"]+)\"")
                .matcher(get("/login").body());
        if (!token.find()) {
            throw new AssertionError("no CSRF token on the login page");
        }
        String body =
                "username=" + encode(username) + "&password=" + encode(password) + "&_csrf=" + encode(token.group(1));
        return send(request("/login", headers)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(body)));
    }

    HttpResponse<String> basic(String path, String username, String password) throws Exception {
        String credentials =
                Base64.getEncoder().encodeToString((username + ":" + password).getBytes(StandardCharsets.UTF_8));
        return get(path, "Authorization", "Basic " + credentials);
    }

    HttpResponse<String> get(String path, String... headers) throws Exception {
        return send(request(path, headers).GET());
    }

    HttpResponse<String> post(String path, String... headers) throws Exception {
        return send(request(path, headers).POST(HttpRequest.BodyPublishers.noBody()));
    }

    private HttpRequest.Builder request(String path, String... headers) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + path));
        if (headers.length > 0) {
            request.headers(headers);
        }
        return request;
    }

    private HttpResponse<String> send(HttpRequest.Builder request) throws Exception {
        return this.client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static String encode(String value) {
        return URLEncoder.encode(value, StandardCharsets.UTF_8);
    }
}
