package dev.throttle.sample;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.testing.redis.SharedRedis;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * {@code --throttle.store.type=redis}: two instances of the sample app on two ports share one limit.
 */
class SampleRedisTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    @BeforeEach
    void flush() {
        SharedRedis.flush();
    }

    // a generous timeout: this test is about sharing one limit, not about a slow first call on a busy CI machine
    private static ConfigurableApplicationContext start() {
        return new SpringApplicationBuilder(SampleApplication.class)
                .run(
                        "--server.port=0",
                        "--throttle.store.type=redis",
                        "--spring.data.redis.url=" + SharedRedis.endpoint().url(),
                        "--throttle.store.redis.timeout=2s",
                        "--throttle.policies.api.limit=3",
                        "--throttle.policies.login.timeouts=1m,2m");
    }

    private static int port(ConfigurableApplicationContext context) {
        return ((WebServerApplicationContext) context).getWebServer().getPort();
    }

    private static HttpResponse<String> hello(ConfigurableApplicationContext context) throws Exception {
        return client.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + port(context) + "/api/hello"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> login(ConfigurableApplicationContext context, String password)
            throws Exception {
        return client.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + port(context) + "/api/login"))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(
                                "{\"email\":\"alice@example.com\",\"password\":\"" + password + "\"}"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void twoInstancesOnOneRedisShareOneLimit() throws Exception {
        try (ConfigurableApplicationContext first = start();
                ConfigurableApplicationContext second = start()) {
            assertThat(hello(first).statusCode()).isEqualTo(200);
            assertThat(hello(second).statusCode()).isEqualTo(200);
            assertThat(hello(first).statusCode()).isEqualTo(200);
            HttpResponse<String> refused = hello(second);
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.headers().firstValue("Retry-After"))
                    .hasValueSatisfying(
                            (seconds) -> assertThat(Integer.parseInt(seconds)).isBetween(1, 20));

            assertThat(login(first, "guess").statusCode()).isEqualTo(401);
            HttpResponse<String> locked = login(second, "wonderland");
            assertThat(locked.statusCode())
                    .as("the lockout started on the other instance")
                    .isEqualTo(429);
            assertThat(locked.body()).contains("\"violated-policies\":[\"login\"]");
        }
    }
}
