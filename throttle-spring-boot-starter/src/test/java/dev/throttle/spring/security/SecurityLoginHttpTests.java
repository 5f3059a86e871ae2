package dev.throttle.spring.security;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * Spring Security logins throttled by {@code throttle.security.authentication} alone, through a
 * real port and Spring Security's real filter chain: form login, HTTP Basic and a filter of the
 * application's own; charged before the password is checked, settled by a success, refused with
 * 429 (never 401, never a redirect), an unknown user indistinguishable from a known one.
 */
class SecurityLoginHttpTests {

    @Nested
    @SpringBootTest(
            classes = LoginTestApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "throttle.policies.login.algorithm=lockout",
                "throttle.policies.login.timeouts=1s,2s,4s",
                "throttle.policies.login.reset-on-success=true",
                "throttle.policies.login-ip.algorithm=token-bucket",
                "throttle.policies.login-ip.capacity=5",
                "throttle.policies.login-ip.refill-period=30s",
                "throttle.security.authentication.username-policy=login",
                "throttle.security.authentication.ip-policy=login-ip"
            })
    @ExtendWith(OutputCaptureExtension.class)
    class ByUsernameAndAddress {

        @LocalServerPort
        int port;

        @Autowired
        ManualTimeSource clock;

        @Autowired
        MemoryThrottleStore store;

        @Autowired
        LoginTestApplication.CountingPasswordEncoder encoder;

        LoginClient client;

        @BeforeEach
        void startClean() {
            this.store.clear();
            this.client = new LoginClient(this.port);
        }

        @Test
        void formLoginWrongPasswordsAreRefusedWith429AndTheRightPasswordAfterTheWaitSignsIn(CapturedOutput output)
                throws Exception {
            HttpResponse<String> wrong = this.client.formLogin("alice@example.com", "guess");
            assertThat(wrong.statusCode()).isEqualTo(302);
            assertThat(wrong.headers().firstValue("Location"))
                    .hasValueSatisfying((to) -> assertThat(to).endsWith("/login?error"));
            assertThat(wrong.headers().firstValue("RateLimit-Policy"))
                    .as("an allowed attempt carries the headers too")
                    .hasValueSatisfying((value) ->
                            assertThat(value).contains("\"login\";q=1;").contains("\"login-ip\";q=5;"));

            HttpResponse<String> refused = this.client.formLogin("alice@example.com", "guess");
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.headers().firstValue("Location"))
                    .as("never a redirect")
                    .isEmpty();
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
            assertThat(refused.headers().firstValue("RateLimit-Policy"))
                    .hasValueSatisfying((value) ->
                            assertThat(value).startsWith("\"login\";q=1;").doesNotContain("login-ip"));
            assertThat(refused.headers().firstValue("RateLimit")).hasValue("\"login\";r=0;t=1");
            assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
            assertThat(refused.body())
                    .contains("\"status\":429")
                    .contains("\"violated-policies\":[\"login\"]")
                    .doesNotContain("alice");

            this.clock.advance(Duration.ofSeconds(1));
            HttpResponse<String> signedIn = this.client.formLogin("alice@example.com", "wonderland");
            assertThat(signedIn.statusCode()).isEqualTo(302);
            assertThat(signedIn.headers().firstValue("Location"))
                    .hasValueSatisfying((to) -> assertThat(to).endsWith("/account"));
            HttpResponse<String> account = this.client.get("/account");
            assertThat(account.statusCode()).isEqualTo(200);
            assertThat(account.body()).isEqualTo("Signed in as alice@example.com");
            assertThat(this.client.formLogin("alice@example.com", "guess").statusCode())
                    .as("the success reset the lockout: a wrong password is a first attempt again")
                    .isEqualTo(302);
            assertThat(output.getAll()).doesNotContain("ERROR").doesNotContain("ThrottledException");
        }

        @Test
        void httpBasicWrongPasswordsAreRefusedWith429NotA401AndTheRightPasswordAfterTheWaitPasses(CapturedOutput output)
                throws Exception {
            assertThat(this.client
                            .basic("/api/me", "alice@example.com", "guess")
                            .statusCode())
                    .isEqualTo(401);
            HttpResponse<String> refused = this.client.basic("/api/me", "alice@example.com", "wonderland");
            assertThat(refused.statusCode())
                    .as("even the right password waits its turn")
                    .isEqualTo(429);
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
            assertThat(refused.headers().firstValue("WWW-Authenticate")).isEmpty();
            assertThat(refused.body()).contains("\"violated-policies\":[\"login\"]");

            this.clock.advance(Duration.ofSeconds(1));
            assertThat(this.client
                            .basic("/api/me", "alice@example.com", "guess")
                            .statusCode())
                    .isEqualTo(401);
            HttpResponse<String> second = this.client.basic("/api/me", "alice@example.com", "guess");
            assertThat(second.statusCode()).isEqualTo(429);
            assertThat(second.headers().firstValue("Retry-After"))
                    .as("the lockout's second rung")
                    .hasValue("2");

            this.clock.advance(Duration.ofSeconds(2));
            HttpResponse<String> me = this.client.basic("/api/me", "alice@example.com", "wonderland");
            assertThat(me.statusCode()).isEqualTo(200);
            assertThat(me.body()).isEqualTo("{\"email\":\"alice@example.com\"}");
            assertThat(me.headers().firstValue("RateLimit"))
                    .as("the headers describe the reset state")
                    .hasValueSatisfying((value) -> assertThat(value).contains("\"login\";r=1;t=0"));
            assertThat(output.getAll()).doesNotContain("ERROR").doesNotContain("ThrottledException");
        }

        @Test
        void aRefusedAttemptNeverReachesThePasswordEncoder() throws Exception {
            assertThat(this.client.formLogin("alice@example.com", "guess").statusCode())
                    .isEqualTo(302);
            assertThat(this.client
                            .basic("/api/me", "nobody@example.com", "guess")
                            .statusCode())
                    .isEqualTo(401);
            int checked = this.encoder.checks.get();
            for (int i = 0; i < 3; i++) {
                assertThat(this.client
                                .formLogin("alice@example.com", "guess" + i)
                                .statusCode())
                        .isEqualTo(429);
                assertThat(this.client
                                .basic("/api/me", "alice@example.com", "guess" + i)
                                .statusCode())
                        .isEqualTo(429);
                assertThat(this.client
                                .basic("/api/me", "NOBODY@example.com ", "guess")
                                .statusCode())
                        .isEqualTo(429);
            }
            assertThat(this.encoder.checks.get())
                    .as("password checks by refused attempts")
                    .isEqualTo(checked);
        }

        @Test
        void anUnknownUsernameIsChargedExactlyLikeAKnownOne() throws Exception {
            List<String> known = attempts("alice@example.com");
            this.store.clear();
            List<String> unknown = attempts("mallory@example.com");
            assertThat(unknown)
                    .isEqualTo(known)
                    .containsExactly(
                            "302 /login?error",
                            "429 1",
                            "302 /login?error",
                            "429 2",
                            "429 1",
                            "302 /login?error",
                            "401 -",
                            "429 4");
        }

        /** Wrong passwords, at once and after waits, by form login and HTTP Basic: status and what follows it. */
        private List<String> attempts(String username) throws Exception {
            List<String> seen = new ArrayList<>();
            seen.add(describe(this.client.formLogin(username, "guess")));
            seen.add(describe(this.client.formLogin(username, "guess")));
            this.clock.advance(Duration.ofSeconds(1));
            seen.add(describe(this.client.formLogin(username, "guess")));
            seen.add(describe(this.client.formLogin(username, "guess")));
            this.clock.advance(Duration.ofSeconds(1));
            seen.add(describe(this.client.basic("/api/me", username, "guess")));
            this.clock.advance(Duration.ofSeconds(1));
            seen.add(describe(this.client.formLogin(username, "guess")));
            this.clock.advance(Duration.ofSeconds(4));
            seen.add(describe(this.client.basic("/api/me", username, "guess")));
            seen.add(describe(this.client.basic("/api/me", username, "guess")));
            return seen;
        }

        private static String describe(HttpResponse<String> response) {
            if (response.statusCode() == 302) {
                String location = response.headers().firstValue("Location").orElse("");
                return "302 " + location.substring(location.indexOf("/login"));
            }
            return response.statusCode() + " "
                    + response.headers().firstValue("Retry-After").orElse("-");
        }

        @Test
        void usernamesThatDifferOnlyInCaseOrSpacesShareOneKeyWhateverTheServersLocale() throws Exception {
            Locale before = Locale.getDefault();
            Locale.setDefault(Locale.forLanguageTag("tr-TR"));
            try {
                assertThat(this.client
                                .formLogin("  ALICE@Example.COM ", "guess")
                                .statusCode())
                        .isEqualTo(302);
                assertThat(this.client
                                .basic("/api/me", "alice@example.com", "guess")
                                .statusCode())
                        .isEqualTo(429);
                assertThat(this.client.formLogin("Alice@example.com\t", "guess").statusCode())
                        .isEqualTo(429);
            } finally {
                Locale.setDefault(before);
            }
        }

        @Test
        void aMalformedBasicHeaderIsA401ThatChargesNothing(CapturedOutput output) throws Exception {
            int checked = this.encoder.checks.get();
            for (String header : new String[] {"Basic !!!not-base64", "Basic bm9jb2xvbg==", "Basic", "Bearer x"}) {
                assertThat(this.client.get("/api/me", "Authorization", header).statusCode())
                        .as(header)
                        .isEqualTo(401);
            }
            assertThat(this.encoder.checks.get()).isEqualTo(checked);
            assertThat(this.client
                            .basic("/api/me", "alice@example.com", "wonderland")
                            .statusCode())
                    .as("nothing was charged to the address or to any username")
                    .isEqualTo(200);
            assertThat(output.getAll()).doesNotContain("ERROR");
        }

        @Test
        void aFloodOfRandomUsernamesFromOneAddressIsHeldByTheAddressPolicy() throws Exception {
            for (int i = 0; i < 5; i++) {
                assertThat(this.client
                                .formLogin("user" + i + "@example.com", "guess")
                                .statusCode())
                        .isEqualTo(302);
            }
            int checked = this.encoder.checks.get();
            HttpResponse<String> refused = this.client.formLogin("fresh@example.com", "guess");
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.body()).contains("\"violated-policies\":[\"login-ip\"]");
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("30");
            assertThat(this.client
                            .basic("/api/me", "another@example.com", "guess")
                            .statusCode())
                    .isEqualTo(429);
            assertThat(this.client.formLogin("alice@example.com", "wonderland").statusCode())
                    .as("the right password too: the address is out of attempts")
                    .isEqualTo(429);
            assertThat(this.encoder.checks.get()).isEqualTo(checked);

            this.clock.advance(Duration.ofSeconds(30));
            assertThat(this.client.formLogin("fresh@example.com", "guess").statusCode())
                    .as("the refused username's charge was given back when the address policy refused")
                    .isEqualTo(302);
        }

        @Test
        void aFilterOfTheApplicationsOwnThatAuthenticatesThroughTheManagerIsThrottledToo() throws Exception {
            assertThat(this.client
                            .post("/custom-login", "X-Username", "alice@example.com", "X-Password", "guess")
                            .statusCode())
                    .isEqualTo(401);
            HttpResponse<String> refused =
                    this.client.post("/custom-login", "X-Username", "alice@example.com", "X-Password", "guess");
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
            this.clock.advance(Duration.ofSeconds(1));
            assertThat(this.client
                            .post("/custom-login", "X-Username", "alice@example.com", "X-Password", "wonderland")
                            .statusCode())
                    .isEqualTo(204);
        }

        @Test
        void aBrowserRefusedAtTheLoginFormGetsThe429ErrorPageNotARedirect() throws Exception {
            String accept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
            assertThat(this.client
                            .formLogin("alice@example.com", "guess", "Accept", accept)
                            .statusCode())
                    .isEqualTo(302);
            HttpResponse<String> refused = this.client.formLogin("alice@example.com", "guess", "Accept", accept);
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.headers().firstValue("Location")).isEmpty();
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
            assertThat(refused.headers().firstValue("Content-Type"))
                    .hasValueSatisfying((type) -> assertThat(type).startsWith("text/html"));
        }

        @Test
        void requestsWithoutCredentialsAreNotCharged() throws Exception {
            for (int i = 0; i < 10; i++) {
                assertThat(this.client.get("/api/me").statusCode()).isEqualTo(401);
                assertThat(this.client.get("/account", "Accept", "text/html").statusCode())
                        .isEqualTo(302);
            }
            assertThat(this.client
                            .basic("/api/me", "alice@example.com", "wonderland")
                            .statusCode())
                    .isEqualTo(200);
        }
    }

    @Nested
    @SpringBootTest(
            classes = LoginTestApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "throttle.policies.login-ip.algorithm=token-bucket",
                "throttle.policies.login-ip.capacity=2",
                "throttle.policies.login-ip.refill-period=30s",
                "throttle.policies.login-ip.count=failures",
                "throttle.security.authentication.ip-policy=login-ip"
            })
    class ByAddressAlone {

        @LocalServerPort
        int port;

        @Autowired
        MemoryThrottleStore store;

        @Test
        void theAddressPolicyAloneWorksAndCountFailuresGivesBackWhatASuccessTook() throws Exception {
            this.store.clear();
            LoginClient client = new LoginClient(this.port);
            for (int i = 0; i < 5; i++) {
                assertThat(client.basic("/api/me", "alice@example.com", "wonderland")
                                .statusCode())
                        .as("successes give back their charge")
                        .isEqualTo(200);
            }
            assertThat(client.basic("/api/me", "alice@example.com", "guess").statusCode())
                    .isEqualTo(401);
            assertThat(client.basic("/api/me", "bob@example.com", "guess").statusCode())
                    .isEqualTo(401);
            HttpResponse<String> refused = client.basic("/api/me", "carol@example.com", "guess");
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.body()).contains("\"violated-policies\":[\"login-ip\"]");
        }
    }

    @Nested
    @SpringBootTest(
            classes = LoginTestApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "throttle.policies.login.algorithm=lockout",
                "throttle.policies.login.timeouts=1h",
                "throttle.security.authentication.username-policy=login",
                "throttle.http.safelist=127.0.0.0/8, ::1"
            })
    class FromASafelistedAddress {

        @LocalServerPort
        int port;

        @Test
        void attemptsAreNotThrottled() throws Exception {
            LoginClient client = new LoginClient(this.port);
            for (int i = 0; i < 5; i++) {
                assertThat(client.basic("/api/me", "alice@example.com", "guess").statusCode())
                        .isEqualTo(401);
            }
            assertThat(client.basic("/api/me", "alice@example.com", "wonderland")
                            .statusCode())
                    .isEqualTo(200);
        }
    }
}
