package dev.throttle.sample;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import dev.throttle.testing.jdbc.SharedPostgres;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * {@code --throttle.store.type=jdbc --spring.datasource.url=...}: two instances of the sample app on
 * two ports share one limit in PostgreSQL; and without a URL the sample has no DataSource at all.
 */
class SampleJdbcTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    // a generous timeout: this test is about sharing one limit, not about a slow first call on a busy CI machine
    private static ConfigurableApplicationContext start(String... more) {
        String[] args = {
            "--server.port=0",
            "--throttle.store.type=jdbc",
            "--spring.datasource.url=" + SharedPostgres.url(),
            "--throttle.store.jdbc.timeout=3s",
            "--throttle.policies.api.limit=3",
            "--throttle.policies.login.timeouts=1m,2m"
        };
        String[] all = new String[args.length + more.length];
        System.arraycopy(args, 0, all, 0, args.length);
        System.arraycopy(more, 0, all, args.length, more.length);
        return new SpringApplicationBuilder(SampleApplication.class).run(all);
    }

    private static HttpResponse<String> hello(ConfigurableApplicationContext context) throws Exception {
        int port = ((WebServerApplicationContext) context).getWebServer().getPort();
        return client.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/api/hello"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> login(ConfigurableApplicationContext context, String password)
            throws Exception {
        int port = ((WebServerApplicationContext) context).getWebServer().getPort();
        return client.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/api/login"))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(
                                "{\"email\":\"alice@example.com\",\"password\":\"" + password + "\"}"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void twoInstancesOnOneDatabaseShareOneLimit() throws Exception {
        SharedPostgres.clear();
        try (ConfigurableApplicationContext first = start();
                ConfigurableApplicationContext second = start()) {
            assertThat(first.getBean(Throttler.class).store().kind()).isEqualTo("jdbc");
            assertThat(hello(first).statusCode()).isEqualTo(200);
            assertThat(hello(second).statusCode()).isEqualTo(200);
            assertThat(hello(first).statusCode()).isEqualTo(200);
            HttpResponse<String> refused = hello(second);
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.headers().firstValue("Retry-After")).isPresent();

            assertThat(login(first, "wonderland").statusCode()).isEqualTo(200);
            assertThat(login(second, "wonderland").statusCode())
                    .as("a success resets the lockout (reset-on-success), and its ip-policy counts failures only")
                    .isEqualTo(200);
            assertThat(login(first, "guess").statusCode()).isEqualTo(401);
            HttpResponse<String> locked = login(second, "wonderland");
            assertThat(locked.statusCode())
                    .as("the lockout started on the other instance")
                    .isEqualTo(429);
            assertThat(locked.body()).contains("\"violated-policies\":[\"login\"]");

            assertThat(get(first, "/api/export?rows=10000").statusCode()).isEqualTo(200);
            assertThat(get(second, "/api/export?rows=10000").statusCode())
                    .as("10,000 rows were left: the estimate passes, the export is charged in full")
                    .isEqualTo(200);
            assertThat(get(first, "/api/export?rows=1").statusCode())
                    .as("the rows the other instance exported were settled in the database")
                    .isEqualTo(429);
        }
    }

    @Test
    void twoInstancesOnOneDatabaseShareTheReportsInProgress() throws Exception {
        SharedPostgres.clear();
        try (ConfigurableApplicationContext first = start();
                ConfigurableApplicationContext second = start()) {
            CompletableFuture<HttpResponse<String>> onFirst = getLater(first, "/api/report?seconds=3");
            CompletableFuture<HttpResponse<String>> onSecond = getLater(second, "/api/report?seconds=3");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (first.getBean(Throttler.class).peek("reports", "127.0.0.1").remaining() > 0) {
                assertThat(System.nanoTime()).as("both reports hold their slot").isLessThan(deadline);
                Thread.sleep(20);
            }
            HttpResponse<String> third = get127(first, "/api/report?seconds=0");
            assertThat(third.statusCode())
                    .as("two reports in progress, one of them on the other instance")
                    .isEqualTo(429);
            assertThat(third.headers().firstValue("RateLimit-Policy")).hasValue("\"reports\";q=2");
            assertThat(onFirst.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
            assertThat(onSecond.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
            assertThat(get127(second, "/api/report?seconds=0").statusCode())
                    .as("both slots released in the database")
                    .isEqualTo(200);
        }
    }

    private static CompletableFuture<HttpResponse<String>> getLater(
            ConfigurableApplicationContext context, String path) {
        int port = ((WebServerApplicationContext) context).getWebServer().getPort();
        return client.sendAsync(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** The reports' key is the client's address: every request of that test comes from 127.0.0.1. */
    private static HttpResponse<String> get127(ConfigurableApplicationContext context, String path) throws Exception {
        return getLater(context, path).get(30, TimeUnit.SECONDS);
    }

    private static HttpResponse<String> get(ConfigurableApplicationContext context, String path) throws Exception {
        int port = ((WebServerApplicationContext) context).getWebServer().getPort();
        return client.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void withoutADatabaseUrlTheSampleStartsOnTheMemoryStoreWithNoDataSource() throws Exception {
        try (ConfigurableApplicationContext context =
                new SpringApplicationBuilder(SampleApplication.class).run("--server.port=0")) {
            assertThat(context.getBeanNamesForType(DataSource.class)).isEmpty();
            assertThat(context.getBean(Throttler.class).store().kind()).isEqualTo("memory");
            assertThat(hello(context).statusCode()).isEqualTo(200);
        }
    }
}
