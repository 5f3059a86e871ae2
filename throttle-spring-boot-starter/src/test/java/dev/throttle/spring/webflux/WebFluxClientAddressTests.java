package dev.throttle.spring.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * {@code #ip} in WebFlux, through a real Netty port behind a proxy (the loopback client): IPv6
 * clients share the bucket of their /64, IPv4 clients have one each.
 */
@SpringBootTest(
        classes = WebFluxTestApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.main.web-application-type=reactive",
            "server.forward-headers-strategy=native",
            "throttle.policies.api.algorithm=gcra",
            "throttle.policies.api.limit=3",
            "throttle.policies.api.period=60s",
            "throttle.policies.login.algorithm=lockout",
            "throttle.policies.login.timeouts=1s,2s",
            "throttle.policies.login.reset-on-success=true"
        })
class WebFluxClientAddressTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    @LocalServerPort
    int port;

    private int status(String forwardedFor) throws Exception {
        return client.send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + "/mono"))
                                .header("X-Forwarded-For", forwardedFor)
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .statusCode();
    }

    @Test
    void fiftyAddressesOfOneSlash64ShareOneBucketAndOtherNetworksDoNot() throws Exception {
        int allowed = 0;
        for (int i = 1; i <= 50; i++) {
            if (status("2001:db8:7:8:" + Integer.toHexString(i * 977) + "::" + Integer.toHexString(i)) == 200) {
                allowed++;
            }
        }
        assertThat(allowed).isEqualTo(3);
        assertThat(status("2001:db8:7:9::1")).isEqualTo(200);
        for (int i = 0; i < 3; i++) {
            assertThat(status("198.51.100.20")).isEqualTo(200);
        }
        assertThat(status("198.51.100.20")).isEqualTo(429);
        assertThat(status("198.51.100.21")).isEqualTo(200);
    }
}
