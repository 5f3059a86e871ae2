package dev.throttle.spring.web;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import dev.throttle.ManualTimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.webmvc.test.autoconfigure.AutoConfigureMockMvc;
import org.springframework.http.MediaType;
import org.springframework.test.web.servlet.MockMvc;

/**
 * The HTTP contract, through MockMvc and through a real port: RateLimit headers on every
 * throttled response, 429 with Retry-After and a problem+json body on refusal.
 */
class ThrottleHttpTests {

    static final HttpClient client = HttpClient.newHttpClient();

    static HttpResponse<String> send(int port, String path, String... headers) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path));
        if (headers.length > 0) {
            request.headers(headers);
        }
        return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Nested
    @SpringBootTest(
            classes = HttpTestApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=3",
                "throttle.policies.api.period=60s",
                "throttle.policies.burst.algorithm=token-bucket",
                "throttle.policies.burst.capacity=100",
                "throttle.policies.burst.refill-period=1s"
            })
    @AutoConfigureMockMvc
    class DefaultSettings {

        @Autowired
        MockMvc mvc;

        @Autowired
        ManualTimeSource clock;

        @Autowired
        MemoryThrottleStore store;

        @LocalServerPort
        int port;

        @BeforeEach
        void clearState() {
            this.store.clear();
        }

        @Test
        void mockMvcSeesRateLimitHeadersOnEveryAllowedResponseAndA429ProblemOnRefusal() throws Exception {
            this.mvc
                    .perform(get("/api"))
                    .andExpect(status().isOk())
                    .andExpect(header().string("RateLimit-Policy", "\"api\";q=3;w=60"))
                    .andExpect(header().string("RateLimit", "\"api\";r=2;t=20"));
            // t is the time until the next unit (one 20 s interval), not until the key is neutral
            this.mvc.perform(get("/api")).andExpect(header().string("RateLimit", "\"api\";r=1;t=20"));
            this.mvc.perform(get("/api")).andExpect(header().string("RateLimit", "\"api\";r=0;t=20"));
            this.mvc
                    .perform(get("/api"))
                    .andExpect(status().isTooManyRequests())
                    .andExpect(header().string("Retry-After", "20"))
                    .andExpect(header().string("RateLimit-Policy", "\"api\";q=3;w=60"))
                    .andExpect(header().string("RateLimit", "\"api\";r=0;t=20"))
                    .andExpect(content().contentTypeCompatibleWith(MediaType.APPLICATION_PROBLEM_JSON))
                    .andExpect(
                            jsonPath("$.type").value("https://iana.org/assignments/http-problem-types#quota-exceeded"))
                    .andExpect(jsonPath("$.title").value("Too Many Requests"))
                    .andExpect(jsonPath("$.status").value(429))
                    .andExpect(
                            jsonPath("$.detail").value("Too many requests under policy 'api'; retry after 20 seconds."))
                    .andExpect(jsonPath("$.violated-policies[0]").value("api"))
                    .andExpect(jsonPath("$.violated-policies.length()").value(1));
        }

        @Test
        void aRealServerSendsTheSameContract() throws Exception {
            for (int i = 2; i >= 0; i--) {
                HttpResponse<String> allowed = send(this.port, "/api");
                assertThat(allowed.statusCode()).isEqualTo(200);
                assertThat(allowed.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=3;w=60");
                assertThat(allowed.headers().firstValue("RateLimit")).hasValue("\"api\";r=" + i + ";t=20");
            }
            HttpResponse<String> refused = send(this.port, "/api");
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("20");
            assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
            assertThat(refused.body())
                    .contains("\"type\":\"https://iana.org/assignments/http-problem-types#quota-exceeded\"")
                    .contains("\"title\":\"Too Many Requests\"")
                    .contains("\"status\":429")
                    .contains("\"violated-policies\":[\"api\"]");
        }

        @Test
        void retryAfterIsWholeSecondsRoundedUpAndNeverZero() throws Exception {
            for (int i = 0; i < 3; i++) {
                send(this.port, "/api");
            }
            this.clock.advance(Duration.ofMillis(500));
            assertThat(send(this.port, "/api").headers().firstValue("Retry-After"))
                    .hasValue("20");
            this.clock.advance(Duration.ofMillis(19_499));
            HttpResponse<String> almost = send(this.port, "/api");
            assertThat(almost.statusCode()).isEqualTo(429);
            assertThat(almost.headers().firstValue("Retry-After")).hasValue("1");
            this.clock.advance(Duration.ofMillis(1));
            assertThat(send(this.port, "/api").statusCode()).isEqualTo(200);
        }

        @Test
        void aSpoofedXForwardedForBuysNoFreshBucket() throws Exception {
            for (int i = 0; i < 3; i++) {
                assertThat(send(this.port, "/api", "X-Forwarded-For", "203.0.113." + i)
                                .statusCode())
                        .isEqualTo(200);
            }
            assertThat(send(this.port, "/api", "X-Forwarded-For", "198.51.100.7")
                            .statusCode())
                    .isEqualTo(429);
        }

        @Test
        void severalPoliciesShareTheHeaderFieldsAndNoRawKeyLeaks() throws Exception {
            HttpResponse<String> response = send(this.port, "/per-user?user=alice@example.com");
            assertThat(response.headers().firstValue("RateLimit-Policy"))
                    .hasValue("\"api\";q=3;w=60, \"burst\";q=100;w=100");
            assertThat(response.headers().firstValue("RateLimit")).hasValue("\"api\";r=2;t=20, \"burst\";r=99;t=1");
            assertThat(response.headers().map().toString())
                    .doesNotContain("alice")
                    .doesNotContain("127.0.0.1");
        }

        @Test
        void aRequestParameterNamedIpBuysNoFreshBucket() throws Exception {
            for (int i = 0; i < 3; i++) {
                assertThat(send(this.port, "/noted?note=n" + i + "&ip=203.0.113." + i)
                                .statusCode())
                        .isEqualTo(200);
            }
            assertThat(send(this.port, "/noted?note=n9&ip=198.51.100.7").statusCode())
                    .isEqualTo(429);
        }

        @Test
        void aHandlerReturningMonoGetsTheSameContract() throws Exception {
            for (int i = 2; i >= 0; i--) {
                HttpResponse<String> allowed = send(this.port, "/mono");
                assertThat(allowed.statusCode()).isEqualTo(200);
                assertThat(allowed.headers().firstValue("RateLimit")).hasValue("\"api\";r=" + i + ";t=20");
            }
            HttpResponse<String> refused = send(this.port, "/mono");
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("20");
            assertThat(refused.body()).contains("\"violated-policies\":[\"api\"]");
        }

        @Test
        void principalIsTheAuthenticatedUsersName() throws Exception {
            for (int i = 0; i < 3; i++) {
                this.mvc.perform(get("/whoami").principal(() -> "alice")).andExpect(status().isOk());
            }
            this.mvc.perform(get("/whoami").principal(() -> "alice")).andExpect(status().isTooManyRequests());
            this.mvc.perform(get("/whoami").principal(() -> "bob")).andExpect(status().isOk());
        }

        @Test
        void aKeyThatThrowsIsNoServerErrorButTheSharedBucket() throws Exception {
            for (String email : new String[] {"a@b", "c@d", "e@f"}) {
                assertThat(send(this.port, "/prefix?email=" + email).statusCode())
                        .isEqualTo(200);
            }
            assertThat(send(this.port, "/prefix?email=g@h").statusCode())
                    .as("one shared bucket, never a bypass")
                    .isEqualTo(429);
            assertThat(send(this.port, "/prefix?email=alice@example.com").statusCode())
                    .isEqualTo(200);
        }

        @Test
        void unthrottledHandlersGetNoRateLimitHeaders() throws Exception {
            HttpResponse<String> response = send(this.port, "/open");
            assertThat(response.statusCode()).isEqualTo(200);
            assertThat(response.headers().firstValue("RateLimit")).isEmpty();
        }
    }

    @Nested
    @SpringBootTest(
            classes = HttpTestApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "server.forward-headers-strategy=native",
                "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=3",
                "throttle.policies.api.period=60s",
                "throttle.policies.burst.algorithm=token-bucket",
                "throttle.policies.burst.capacity=100",
                "throttle.policies.burst.refill-period=1s"
            })
    class ForwardHeadersStrategy {

        @LocalServerPort
        int port;

        @Test
        void whenTheApplicationTrustsItsProxyTheForwardedAddressIsTheKey() throws Exception {
            for (int i = 0; i < 3; i++) {
                assertThat(send(this.port, "/api", "X-Forwarded-For", "203.0.113.1")
                                .statusCode())
                        .isEqualTo(200);
            }
            assertThat(send(this.port, "/api", "X-Forwarded-For", "203.0.113.1").statusCode())
                    .isEqualTo(429);
            assertThat(send(this.port, "/api", "X-Forwarded-For", "203.0.113.2").statusCode())
                    .isEqualTo(200);
        }

        @Test
        void aHandlerReturningMonoIsKeyedByItsOwnClientNotByOneSharedBucket() throws Exception {
            for (int i = 0; i < 3; i++) {
                assertThat(send(this.port, "/mono", "X-Forwarded-For", "203.0.113.5")
                                .statusCode())
                        .isEqualTo(200);
            }
            assertThat(send(this.port, "/mono", "X-Forwarded-For", "203.0.113.5")
                            .statusCode())
                    .isEqualTo(429);
            HttpResponse<String> other = send(this.port, "/mono", "X-Forwarded-For", "203.0.113.6");
            assertThat(other.statusCode()).isEqualTo(200);
            assertThat(other.headers().firstValue("RateLimit")).hasValue("\"api\";r=2;t=20");
        }
    }

    @Nested
    @SpringBootTest(
            classes = HttpTestApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "throttle.http.headers=none",
                "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=1",
                "throttle.policies.api.period=60s",
                "throttle.policies.burst.algorithm=token-bucket",
                "throttle.policies.burst.capacity=100",
                "throttle.policies.burst.refill-period=1s"
            })
    class HeadersNone {

        @LocalServerPort
        int port;

        @Test
        void noRateLimitHeadersButRetryAfterStays() throws Exception {
            HttpResponse<String> allowed = send(this.port, "/api");
            assertThat(allowed.headers().firstValue("RateLimit")).isEmpty();
            assertThat(allowed.headers().firstValue("RateLimit-Policy")).isEmpty();
            HttpResponse<String> refused = send(this.port, "/api");
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("60");
            assertThat(refused.headers().firstValue("RateLimit")).isEmpty();
        }
    }
}
