package dev.throttle.sample;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The sample app as Spring AOT leaves it: the repackaged jar, whose bean definitions
 * {@code process-aot} generated as code, started as a user starts it with
 * {@code java -Dspring.aot.enabled=true -jar}, and driven through its real port.
 *
 * <p>Runs after {@code package} (the {@code aot-jar} execution of Surefire in this module's pom,
 * part of {@code ./mvnw verify}), which hands it the jar in {@value #JAR_PROPERTY}. Without that
 * property (an IDE, or the {@code test} phase) it is skipped, saying how to run it.
 */
class SampleApplicationAotTests {

    static final String JAR_PROPERTY = "sample.aot.jar";

    private static final Pattern PORT = Pattern.compile("Tomcat started on port (\\d+)");

    private static final Duration STARTUP = Duration.ofSeconds(120);

    private static final HttpClient client = HttpClient.newHttpClient();

    @TempDir
    static Path logs;

    private static Process app;

    private static Path log;

    private static int port;

    @BeforeAll
    static void startTheJarWithAot() throws Exception {
        String jar = System.getProperty(JAR_PROPERTY);
        Assumptions.assumeTrue(jar != null, "needs the packaged jar: ./mvnw -pl sample-app -am verify");
        assertThat(Path.of(jar)).as("the repackaged jar, with the AOT classes").exists();
        log = logs.resolve("sample-app.log");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // policies changed from the command line, as docs/sample-app.md shows: the api policy refuses a third call,
        // and the lockout's first rung is long enough that a busy machine cannot outwait it between two calls
        app = new ProcessBuilder(
                        java,
                        "-Dspring.aot.enabled=true",
                        "-XX:TieredStopAtLevel=1",
                        "-jar",
                        jar,
                        "--server.port=0",
                        "--throttle.policies.api.limit=2",
                        "--throttle.policies.api.period=1h",
                        "--throttle.policies.login.timeouts=2s,1h")
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        port = awaitPort();
    }

    @AfterAll
    static void stop() throws Exception {
        if (app != null) {
            app.destroy();
            if (!app.waitFor(20, TimeUnit.SECONDS)) {
                app.destroyForcibly();
            }
        }
    }

    @Test
    void theAppStartsFromItsAotProcessedBeanDefinitions() throws Exception {
        assertThat(Files.readString(log)).contains("Starting AOT-processed SampleApplication");
    }

    @Test
    void wrongPasswordsAreRefusedWith429AndRetryAfterUntilTheLockoutEndsAndASuccessClearsIt() throws Exception {
        assertThat(login("alice@example.com", "guess").statusCode()).isEqualTo(401);
        HttpResponse<String> refused = login("alice@example.com", "guess");
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(429);
        long retryAfter =
                Long.parseLong(refused.headers().firstValue("Retry-After").orElseThrow());
        assertThat(retryAfter)
                .as("the first rung, 2 s, in whole seconds rounded up")
                .isBetween(1L, 2L);
        assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(refused.body()).contains("\"violated-policies\":[\"login\"]");
        Thread.sleep(Duration.ofSeconds(retryAfter).plusMillis(100).toMillis());
        HttpResponse<String> signedIn = login("  ALICE@example.com ", "wonderland");
        assertThat(signedIn.statusCode()).as(signedIn.body()).isEqualTo(200);
        assertThat(signedIn.body()).isEqualTo("{\"email\":\"alice@example.com\"}");
        assertThat(login("alice@example.com", "guess").statusCode())
                .as("the success cleared the lockout: a wrong password is a first attempt again, not an hour's lock")
                .isEqualTo(401);
    }

    @Test
    void helloIsThrottledPerClient() throws Exception {
        assertThat(get("/api/hello").statusCode()).isEqualTo(200);
        assertThat(get("/api/hello").statusCode()).isEqualTo(200);
        HttpResponse<String> refused = get("/api/hello");
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Retry-After").map(Long::parseLong))
                .as("half an hour: 2 per hour, one back every 30 minutes")
                .hasValueSatisfying((seconds) -> assertThat(seconds).isBetween(1_790L, 1_800L));
        assertThat(refused.body()).contains("\"violated-policies\":[\"api\"]");
    }

    @Test
    void springSecuritysHttpBasicIsThrottledByTheSameLockoutWithoutAnErrorInTheLog() throws Exception {
        assertThat(basic("bob@example.com", "guess").statusCode()).isEqualTo(401);
        HttpResponse<String> refused = basic("bob@example.com", "builder");
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(429);
        long retryAfter =
                Long.parseLong(refused.headers().firstValue("Retry-After").orElseThrow());
        assertThat(retryAfter)
                .as("the first rung, 2 s, in whole seconds rounded up")
                .isBetween(1L, 2L);
        assertThat(refused.body()).contains("\"violated-policies\":[\"login\"]");
        Thread.sleep(Duration.ofSeconds(retryAfter).plusMillis(100).toMillis());
        HttpResponse<String> me = basic("bob@example.com", "builder");
        assertThat(me.statusCode()).as(me.body()).isEqualTo(200);
        assertThat(me.body()).isEqualTo("{\"email\":\"bob@example.com\"}");
        assertThat(Files.readString(log)).doesNotContain("ThrottledException").doesNotContain(" ERROR ");
    }

    private static HttpResponse<String> basic(String email, String password) throws Exception {
        String credentials = java.util.Base64.getEncoder()
                .encodeToString((email + ":" + password).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return client.send(
                HttpRequest.newBuilder(uri("/api/me"))
                        .header("Authorization", "Basic " + credentials)
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static int awaitPort() throws Exception {
        long deadline = System.nanoTime() + STARTUP.toNanos();
        while (System.nanoTime() < deadline) {
            String output = Files.readString(log);
            Matcher matcher = PORT.matcher(output);
            if (matcher.find()) {
                return Integer.parseInt(matcher.group(1));
            }
            if (!app.isAlive()) {
                throw new AssertionError("the app exited with " + app.exitValue() + ":\n" + output);
            }
            Thread.sleep(100);
        }
        throw new AssertionError("the app did not start within " + STARTUP + ":\n" + Files.readString(log));
    }

    private static HttpResponse<String> login(String email, String password) throws Exception {
        String body = "{\"email\":\"" + email + "\",\"password\":\"" + password + "\"}";
        return client.send(
                HttpRequest.newBuilder(uri("/api/login"))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> get(String path) throws Exception {
        return client.send(HttpRequest.newBuilder(uri(path)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private static URI uri(String path) {
        return URI.create("http://localhost:" + port + path);
    }
}
