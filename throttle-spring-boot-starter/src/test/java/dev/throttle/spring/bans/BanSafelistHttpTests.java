package dev.throttle.spring.bans;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * A safelisted address is never banned: a ban an operator adds by hand for its address, or for the
 * key another ban reads from its requests, refuses none of them.
 */
@SpringBootTest(
        classes = BanSafelistHttpTests.App.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.policies.api.algorithm=fixed-window",
            "throttle.policies.api.limit=1",
            "throttle.policies.api.window=1h",
            "throttle.http.safelist=127.0.0.1",
            "throttle.bans.abuse.after=1",
            "throttle.bans.abuse.within=1m",
            "throttle.bans.abuse.for=10m",
            "throttle.bans.by-header.after=1",
            "throttle.bans.by-header.within=1m",
            "throttle.bans.by-header.for=10m",
            "throttle.bans.by-header.key=#headers['X-Client']"
        })
class BanSafelistHttpTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    @LocalServerPort
    int port;

    @Autowired
    Bans bans;

    @Test
    void aSafelistedAddressIsNeverBannedEvenByHand() throws Exception {
        this.bans.start("abuse", "127.0.0.1", Duration.ofMinutes(10));
        this.bans.start("by-header", "mallory", Duration.ofMinutes(10));
        assertThat(get("mallory").statusCode()).isEqualTo(200);
        assertThat(get("alice").statusCode()).isEqualTo(200);
    }

    private HttpResponse<String> get(String client) throws Exception {
        return BanSafelistHttpTests.client.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + "/page"))
                        .header("X-Client", client)
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class App {

        @RestController
        static class Pages {

            @GetMapping("/page")
            String page() {
                return "page";
            }
        }
    }
}
