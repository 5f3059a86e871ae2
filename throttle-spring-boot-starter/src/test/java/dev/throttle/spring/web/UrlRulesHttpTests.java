package dev.throttle.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * URL rules, the safelist and the blocklist through a real Tomcat port: a rule charges every
 * spelling of its path, several rules charge in order and give back, a blocked address gets 403 on
 * every request, a safelisted one is throttled neither by rules nor by annotations, and a client
 * cannot choose its address by sending X-Forwarded-For.
 */
class UrlRulesHttpTests {

    static final HttpClient client = HttpClient.newHttpClient();

    static HttpResponse<String> send(String host, int port, String method, String path, String... headers)
            throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://" + host + ":" + port + path))
                .method(method, HttpRequest.BodyPublishers.noBody())
                .timeout(Duration.ofSeconds(30));
        if (headers.length > 0) {
            request.headers(headers);
        }
        return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    static HttpResponse<String> get(int port, String path, String... headers) throws Exception {
        return send("127.0.0.1", port, "GET", path, headers);
    }

    @Nested
    @SpringBootTest(
            classes = RulesTestApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = "spring.main.banner-mode=off")
    class Rules {

        @LocalServerPort
        int port;

        @Autowired
        MemoryThrottleStore store;

        @Autowired
        Throttler throttler;

        @BeforeEach
        void clearState() {
            this.store.clear();
        }

        @Test
        void aRuleChargesItsPathAndRefusesWith429AndTheHeaders() throws Exception {
            for (int i = 0; i < 3; i++) {
                HttpResponse<String> allowed = get(this.port, "/api/hello");
                assertThat(allowed.statusCode()).isEqualTo(200);
                assertThat(allowed.headers().firstValue("RateLimit")).hasValue("\"api\";r=" + (2 - i) + ";t=20");
                assertThat(allowed.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=3;w=60");
            }
            HttpResponse<String> refused = get(this.port, "/api/hello", "Accept", "application/json");
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("20");
            assertThat(refused.headers().firstValue("RateLimit")).hasValue("\"api\";r=0;t=20");
            assertThat(refused.headers().firstValue("Content-Type"))
                    .hasValueSatisfying((type) -> assertThat(type).startsWith("application/problem+json"));
            assertThat(refused.body()).contains("\"status\":429", "\"violated-policies\":[\"api\"]");
        }

        @Test
        void noSpellingOfThePathEscapesTheRule() throws Exception {
            for (int i = 0; i < 3; i++) {
                assertThat(get(this.port, "/api/hello").statusCode()).isEqualTo(200);
            }
            for (String variant : new String[] {
                "/api/hello/",
                "/API/hello",
                "/api/HELLO",
                "/api/hell%6F",
                "/api/hello;jsessionid=ABC",
                "/api;v=1/hello",
                "//api/hello",
                "/api//hello",
                "/api/./hello",
                "/api/x/../hello"
            }) {
                assertThat(get(this.port, variant).statusCode()).as(variant).isEqualTo(429);
            }
            assertThat(send("127.0.0.1", this.port, "HEAD", "/api/hello").statusCode())
                    .as("HEAD")
                    .isEqualTo(429);
        }

        @Test
        void aRequestMatchedByTwoRulesIsChargedByBothAndARefusalGivesBackTheFirst() throws Exception {
            HttpResponse<String> first = get(this.port, "/api/reports/7");
            assertThat(first.statusCode()).isEqualTo(200);
            assertThat(first.headers().firstValue("RateLimit")).hasValue("\"wide\";r=99;t=60, \"tight\";r=0;t=60");
            assertThat(this.throttler.peek("wide", "127.0.0.1").remaining()).isEqualTo(99);
            HttpResponse<String> refused = get(this.port, "/api/reports/7");
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.body()).contains("\"violated-policies\":[\"tight\"]");
            assertThat(this.throttler.peek("wide", "127.0.0.1").remaining())
                    .as("given back")
                    .isEqualTo(99);
            assertThat(get(this.port, "/api/reports/8").statusCode())
                    .as("#path['id'] keys by report")
                    .isEqualTo(200);
            assertThat(this.throttler.peek("wide", "127.0.0.1").remaining()).isEqualTo(98);
        }

        @Test
        void aPathNoRuleMatchesIsNotThrottledAndHasNoHeaders() throws Exception {
            for (int i = 0; i < 5; i++) {
                HttpResponse<String> response = get(this.port, "/open");
                assertThat(response.statusCode()).isEqualTo(200);
                assertThat(response.headers().firstValue("RateLimit")).isEmpty();
            }
        }

        @Test
        void aBrowserGetsTheApplicationsErrorPageWithStatus429AndTheHeaders() throws Exception {
            for (int i = 0; i < 3; i++) {
                get(this.port, "/api/hello");
            }
            HttpResponse<String> page = get(
                    this.port,
                    "/api/hello",
                    "Accept",
                    "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8");
            assertThat(page.statusCode()).isEqualTo(429);
            assertThat(page.headers().firstValue("Content-Type"))
                    .hasValueSatisfying((type) -> assertThat(type).startsWith("text/html"));
            assertThat(page.body()).contains("Slow down");
            assertThat(page.headers().firstValue("Retry-After")).hasValue("20");
            assertThat(page.headers().firstValue("RateLimit")).hasValue("\"api\";r=0;t=20");
        }

        @Test
        void aClientCannotBuyAFreshBucketWithXForwardedFor() throws Exception {
            for (int i = 0; i < 3; i++) {
                assertThat(get(this.port, "/api/hello", "X-Forwarded-For", "198.51.100." + i)
                                .statusCode())
                        .isEqualTo(200);
            }
            assertThat(get(this.port, "/api/hello", "X-Forwarded-For", "198.51.100.99")
                            .statusCode())
                    .isEqualTo(429);
        }
    }

    @Nested
    @SpringBootTest(
            classes = RulesTestApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {"throttle.http.blocklist=127.0.0.0/8, 2001:db8::/32", "throttle.http.safelist=10.0.0.0/8"})
    class Blocklist {

        @LocalServerPort
        int port;

        @Test
        void aBlockedAddressGets403OnEveryRequestThrottledOrNot() throws Exception {
            for (String path : new String[] {"/open", "/api/hello", "/annotated", "/nowhere"}) {
                HttpResponse<String> response = get(this.port, path);
                assertThat(response.statusCode()).as(path).isEqualTo(403);
                assertThat(response.headers().firstValue("Content-Type"))
                        .hasValueSatisfying((type) -> assertThat(type).startsWith("application/problem+json"));
                assertThat(response.body()).contains("\"status\":403");
            }
        }

        @Test
        void aBlockedBrowserGetsThe403ErrorPage() throws Exception {
            HttpResponse<String> page = get(this.port, "/open", "Accept", "text/html");
            assertThat(page.statusCode()).isEqualTo(403);
            assertThat(page.headers().firstValue("Content-Type"))
                    .hasValueSatisfying((type) -> assertThat(type).startsWith("text/html"));
        }

        @Test
        void aSafelistedAddressInXForwardedForDoesNotUnblockAClient() throws Exception {
            assertThat(get(this.port, "/open", "X-Forwarded-For", "10.1.2.3").statusCode())
                    .isEqualTo(403);
        }
    }

    @Nested
    @SpringBootTest(
            classes = RulesTestApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {"throttle.http.safelist=127.0.0.1/32, ::1"})
    class Safelist {

        @LocalServerPort
        int port;

        @Autowired
        Throttler throttler;

        @Test
        void aSafelistedAddressIsThrottledNeitherByRulesNorByAnnotations() throws Exception {
            for (int i = 0; i < 6; i++) {
                assertThat(get(this.port, "/api/hello").statusCode()).isEqualTo(200);
                assertThat(get(this.port, "/annotated").statusCode()).isEqualTo(200);
            }
            assertThat(this.throttler.peek("api", "127.0.0.1").remaining())
                    .as("never charged")
                    .isEqualTo(3);
            assertThat(this.throttler.peek("annotated", "127.0.0.1").remaining())
                    .isEqualTo(1);
        }
    }

    @Nested
    @SpringBootTest(
            classes = RulesTestApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {"throttle.http.safelist=10.0.0.0/8", "throttle.http.blocklist=203.0.113.0/24"})
    class UntrustedForwardedFor {

        @LocalServerPort
        int port;

        @Test
        void aClaimedSafelistedAddressIsStillThrottledAndAClaimedBlockedOneIsNotBlocked() throws Exception {
            assertThat(get(this.port, "/open", "X-Forwarded-For", "203.0.113.9").statusCode())
                    .isEqualTo(200);
            assertThat(get(this.port, "/annotated", "X-Forwarded-For", "10.1.2.3")
                            .statusCode())
                    .isEqualTo(200);
            assertThat(get(this.port, "/annotated", "X-Forwarded-For", "10.1.2.3")
                            .statusCode())
                    .isEqualTo(429);
        }
    }

    @Nested
    @SpringBootTest(
            classes = RulesTestApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "server.forward-headers-strategy=native",
                "throttle.http.blocklist=203.0.113.0/24",
                "throttle.http.safelist=10.0.0.0/8"
            })
    class TrustedProxy {

        @LocalServerPort
        int port;

        @Test
        void behindATrustedProxyTheForwardedAddressIsTheOneChecked() throws Exception {
            assertThat(get(this.port, "/open", "X-Forwarded-For", "203.0.113.9").statusCode())
                    .isEqualTo(403);
            assertThat(get(this.port, "/open").statusCode()).isEqualTo(200);
            for (int i = 0; i < 3; i++) {
                assertThat(get(this.port, "/annotated", "X-Forwarded-For", "10.1.2.3")
                                .statusCode())
                        .isEqualTo(200);
            }
        }
    }

    @Nested
    @SpringBootTest(
            classes = RulesTestApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {"throttle.http.blocklist=::1/128"})
    class Ipv6 {

        @LocalServerPort
        int port;

        @Test
        void anIpv6ClientIsMatchedByAnIpv6Cidr() throws Exception {
            HttpResponse<String> overIpv6;
            try {
                overIpv6 = send("[::1]", this.port, "GET", "/open");
            } catch (java.net.ConnectException ex) {
                Assumptions.abort("no IPv6 loopback here: " + ex);
                return;
            }
            assertThat(overIpv6.statusCode()).isEqualTo(403);
            assertThat(get(this.port, "/open").statusCode()).as("IPv4 loopback").isEqualTo(200);
        }
    }
}
