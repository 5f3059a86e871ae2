package dev.throttle.sample;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.memory.MemoryThrottleStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;

/**
 * A browser refused by the sample gets its {@code error/429.html} page with status 429 and the
 * headers, through a real port; a script asking for JSON keeps problem+json.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT, properties = "throttle.policies.api.limit=2")
@Import(ManualClockConfiguration.class)
class BrowserRefusalPageTests {

    private static final String BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

    private static final HttpClient client = HttpClient.newHttpClient();

    @LocalServerPort
    int port;

    @Autowired
    MemoryThrottleStore store;

    @BeforeEach
    void startClean() {
        this.store.clear();
    }

    private HttpResponse<String> hello(String accept) throws Exception {
        return client.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + "/api/hello"))
                        .header("Accept", accept)
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aRefusedBrowserGetsTheSamplesErrorPageWithStatus429AndRetryAfter() throws Exception {
        assertThat(hello(BROWSER).statusCode()).isEqualTo(200);
        assertThat(hello(BROWSER).statusCode()).isEqualTo(200);
        HttpResponse<String> page = hello(BROWSER);
        assertThat(page.statusCode()).isEqualTo(429);
        assertThat(page.headers().firstValue("Content-Type"))
                .hasValueSatisfying((type) -> assertThat(type).startsWith("text/html"));
        assertThat(page.body()).contains("<h1>Too many requests</h1>");
        assertThat(page.headers().firstValue("Retry-After")).hasValue("30");
        assertThat(page.headers().firstValue("RateLimit")).hasValue("\"api\";r=0;t=30");
    }

    @Test
    void aScriptAskingForJsonKeepsTheProblem() throws Exception {
        hello("application/json");
        hello("application/json");
        HttpResponse<String> refused = hello("application/json");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(refused.body()).contains("\"violated-policies\":[\"api\"]");
    }
}
