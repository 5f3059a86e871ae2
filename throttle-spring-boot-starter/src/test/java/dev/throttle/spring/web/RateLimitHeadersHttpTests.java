package dev.throttle.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.annotation.Throttled;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * The rate-limit headers tell the truth through a real port, on the case that once made them lie:
 * a login under Lucia's lockout ladder, reset on success. {@code t} is the time until the next
 * attempt can pass, never the hour the lockout's state lasts; a refusal's {@code Retry-After}
 * is never earlier than its {@code t}; a client that waits {@code t} whenever {@code r=0} is never
 * refused; and after a successful login the response shows the reset state.
 */
@SpringBootTest(
        classes = RateLimitHeadersHttpTests.LoginApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.policies.login.algorithm=lockout",
            "throttle.policies.login.timeouts=1s,2s,4s,8s,16s,30s,60s,180s,300s",
            "throttle.policies.login.reset-on-success=true"
        })
class RateLimitHeadersHttpTests {

    private static final Pattern ITEM = Pattern.compile("\"login\";r=(\\d+);t=(\\d+)");

    private static final HttpClient client = HttpClient.newHttpClient();

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
    void aClientThatWaitsTWheneverRIsZeroIsNeverRefusedAndWaitsNoLongerThanTheLadder() throws Exception {
        long[] ladder = {1, 2, 4, 8, 16, 30, 60, 180, 300, 300, 300};
        for (long rung : ladder) {
            HttpResponse<String> response = login("alice", "guess");
            assertThat(response.statusCode())
                    .as("a wrong password, never a refusal")
                    .isEqualTo(401);
            assertThat(response.headers().firstValue("Retry-After")).isEmpty();
            long[] item = lastItem(response);
            assertThat(item[0]).as("r").isZero();
            assertThat(item[1])
                    .as("t is this rung's wait, not the state's hour")
                    .isEqualTo(rung);
            this.clock.advance(Duration.ofSeconds(item[1]));
        }
    }

    @Test
    void aRefusalsRetryAfterIsNeverEarlierThanItsTAndTIsTheWaitNotTheHour() throws Exception {
        login("bob", "guess");
        HttpResponse<String> refused = login("bob", "guess");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(lastItem(refused)).as("r=0;t=1, where t was 3600").containsExactly(0, 1);
        this.clock.advance(Duration.ofMillis(400));
        HttpResponse<String> sooner = login("bob", "guess");
        assertThat(sooner.headers().firstValue("Retry-After"))
                .as("600 ms rounded up")
                .hasValue("1");
        assertThat(lastItem(sooner)).containsExactly(0, 1);
        this.clock.advance(Duration.ofMillis(600));
        assertThat(login("bob", "guess").statusCode()).isEqualTo(401);
        HttpResponse<String> secondRung = login("bob", "guess");
        assertThat(secondRung.headers().firstValue("Retry-After")).hasValue("2");
        assertThat(lastItem(secondRung)).containsExactly(0, 2);
        long retryAfter =
                Long.parseLong(secondRung.headers().firstValue("Retry-After").orElseThrow());
        assertThat(retryAfter).isGreaterThanOrEqualTo(lastItem(secondRung)[1]);
    }

    @Test
    void afterASuccessfulLoginResetTheKeyTheResponseShowsTheResetState() throws Exception {
        login("carol", "guess");
        this.clock.advance(Duration.ofSeconds(1));
        login("carol", "guess");
        this.clock.advance(Duration.ofSeconds(2));
        HttpResponse<String> success = login("carol", "wonderland");
        assertThat(success.statusCode()).isEqualTo(200);
        assertThat(lastItem(success))
                .as("r back at the quota, nothing to wait for")
                .containsExactly(1, 0);
        assertThat(login("carol", "guess").statusCode())
                .as("as the headers said: the next attempt passes")
                .isEqualTo(401);
    }

    private HttpResponse<String> login(String user, String password) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + this.port + "/login?user=" + user + "&password=" + password))
                .POST(HttpRequest.BodyPublishers.noBody())
                .build();
        return client.send(request, HttpResponse.BodyHandlers.ofString());
    }

    /**
     * The policy's item as the client reads it: the last one sent (a field repeated on a response is
     * one list, and the settled state is told after the decision's).
     */
    private static long[] lastItem(HttpResponse<String> response) {
        List<String> values = response.headers().allValues("RateLimit");
        assertThat(values).isNotEmpty();
        Matcher item = ITEM.matcher(String.join(", ", values));
        long[] last = null;
        while (item.find()) {
            last = new long[] {Long.parseLong(item.group(1)), Long.parseLong(item.group(2))};
        }
        assertThat(last).as("a \"login\" item in %s", values).isNotNull();
        return last;
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(LoginEndpoint.class)
    static class LoginApplication {

        @Bean
        ManualTimeSource manualTimeSource() {
            return new ManualTimeSource();
        }
    }

    @RestController
    static class LoginEndpoint {

        @PostMapping("/login")
        @Throttled(policy = "login", key = "#user")
        ResponseEntity<String> login(@RequestParam String user, @RequestParam String password) {
            return "wonderland".equals(password)
                    ? ResponseEntity.ok(user)
                    : ResponseEntity.status(HttpStatus.UNAUTHORIZED).body("wrong password");
        }
    }
}
