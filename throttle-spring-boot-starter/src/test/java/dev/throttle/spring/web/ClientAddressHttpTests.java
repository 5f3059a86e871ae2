package dev.throttle.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleWebMvcAutoConfiguration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * {@code #ip} through a real Tomcat port behind a proxy: IPv6 clients are grouped by their /64
 * (or {@code throttle.http.ipv6-prefix}), IPv4 clients by address; with Tomcat's own remote-IP
 * handling ({@code server.forward-headers-strategy=native}) and trusted proxies, a client cannot
 * choose its {@code #ip} by sending {@code X-Forwarded-For} itself. The loopback client stands for
 * the proxy (Tomcat trusts 127.0.0.1 as an internal proxy by default).
 */
class ClientAddressHttpTests {

    private static final String[] POLICIES = {
        "throttle.policies.api.algorithm=gcra",
        "throttle.policies.api.limit=3",
        "throttle.policies.api.period=60s",
        "throttle.policies.burst.algorithm=token-bucket",
        "throttle.policies.burst.capacity=100",
        "throttle.policies.burst.refill-period=1s"
    };

    static int status(int port, String forwardedFor) throws Exception {
        return ThrottleHttpTests.send(port, "/api", "X-Forwarded-For", forwardedFor)
                .statusCode();
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
    class Ipv6ByPrefix {

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
        void fiftyAddressesOfOneSlash64ShareOneBucketOfAThreePerMinutePolicy() throws Exception {
            int allowed = 0;
            for (int i = 1; i <= 50; i++) {
                String address =
                        "2001:db8:1:2:" + Integer.toHexString(i * 977) + ":" + i + "::" + Integer.toHexString(i);
                if (status(this.port, address) == 200) {
                    allowed++;
                }
            }
            assertThat(allowed).isEqualTo(3);
            assertThat(this.throttler.peek("api", "2001:db8:1:2::").remaining()).isZero();
            assertThat(status(this.port, "2001:db8:1:3::1")).as("another /64").isEqualTo(200);
            assertThat(status(this.port, "2001:db8:2:2::1")).as("another /64").isEqualTo(200);
        }

        @Test
        void ipv4ClientsAreKeyedByAddressAndAMappedIpv6AddressIsTheIpv4One() throws Exception {
            for (int i = 0; i < 3; i++) {
                assertThat(status(this.port, "203.0.113.7")).isEqualTo(200);
            }
            assertThat(status(this.port, "::ffff:203.0.113.7")).isEqualTo(429);
            assertThat(status(this.port, "203.0.113.8"))
                    .as("the next address has its own bucket")
                    .isEqualTo(200);
        }
    }

    @Nested
    @SpringBootTest(
            classes = HttpTestApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "server.forward-headers-strategy=native",
                "throttle.http.ipv6-prefix=48",
                "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=3",
                "throttle.policies.api.period=60s",
                "throttle.policies.burst.algorithm=token-bucket",
                "throttle.policies.burst.capacity=100",
                "throttle.policies.burst.refill-period=1s"
            })
    class Ipv6PrefixConfigured {

        @LocalServerPort
        int port;

        @Test
        void aSlash48SharesOneBucket() throws Exception {
            for (int i = 1; i <= 3; i++) {
                assertThat(status(this.port, "2001:db8:1:" + i + "::1")).isEqualTo(200);
            }
            assertThat(status(this.port, "2001:db8:1:ffff::1")).isEqualTo(429);
            assertThat(status(this.port, "2001:db8:2::1")).isEqualTo(200);
        }
    }

    @Nested
    @SpringBootTest(
            classes = HttpTestApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "server.forward-headers-strategy=native",
                "server.tomcat.remoteip.internal-proxies=127\\.0\\.0\\.1",
                "server.tomcat.remoteip.trusted-proxies=198\\.51\\.100\\.1",
                "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=3",
                "throttle.policies.api.period=60s",
                "throttle.policies.burst.algorithm=token-bucket",
                "throttle.policies.burst.capacity=100",
                "throttle.policies.burst.refill-period=1s"
            })
    class NativeWithTrustedProxies {

        @LocalServerPort
        int port;

        @Test
        void aSpoofedLeftMostForwardedForDoesNotChangeTheClientAddress() throws Exception {
            // the client sent "X-Forwarded-For: <anything>"; the proxy appended the address it saw
            for (int i = 0; i < 3; i++) {
                assertThat(status(this.port, "192.0.2." + i + ", 203.0.113.7")).isEqualTo(200);
            }
            assertThat(status(this.port, "192.0.2.99, 203.0.113.7")).isEqualTo(429);
            assertThat(status(this.port, "2001:db8::" + 1 + ", 203.0.113.7")).isEqualTo(429);
            assertThat(status(this.port, "192.0.2.1, 203.0.113.7, 198.51.100.1"))
                    .as("through a trusted CDN in front of the proxy: still the client it saw")
                    .isEqualTo(429);
            assertThat(status(this.port, "192.0.2.1, 203.0.113.8"))
                    .as("another client")
                    .isEqualTo(200);
        }
    }

    @Nested
    @SpringBootTest(
            classes = HttpTestApplication.class,
            webEnvironment = WebEnvironment.RANDOM_PORT,
            properties = {
                "server.forward-headers-strategy=framework",
                "throttle.policies.api.algorithm=gcra",
                "throttle.policies.api.limit=3",
                "throttle.policies.api.period=60s",
                "throttle.policies.burst.algorithm=token-bucket",
                "throttle.policies.burst.capacity=100",
                "throttle.policies.burst.refill-period=1s"
            })
    class FrameworkStrategy {

        @LocalServerPort
        int port;

        @Test
        void takesTheLeftMostValueWhichTheClientChooses() throws Exception {
            // why docs/concepts.md says native: here every spoofed value buys a fresh bucket
            for (int i = 0; i < 6; i++) {
                assertThat(status(this.port, "192.0.2." + i + ", 203.0.113.7")).isEqualTo(200);
            }
        }
    }

    @Test
    void anIpv6PrefixOutsideOneTo128FailsStartupNamingTheProperty() {
        WebApplicationContextRunner runner = new WebApplicationContextRunner()
                .withConfiguration(
                        AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleWebMvcAutoConfiguration.class))
                .withPropertyValues(POLICIES);
        for (String prefix : new String[] {"0", "129", "-1"}) {
            runner.withPropertyValues("throttle.http.ipv6-prefix=" + prefix)
                    .run((context) -> assertThat(context)
                            .hasFailed()
                            .getFailure()
                            .hasStackTraceContaining(
                                    "throttle.http.ipv6-prefix must be between 1 and 128 (the leading bits "
                                            + "of an IPv6 client address that #ip keeps), was " + prefix));
        }
        runner.withPropertyValues("throttle.http.ipv6-prefix=128")
                .run((context) -> assertThat(context).hasNotFailed());
        runner.withPropertyValues("throttle.http.ipv6-prefix=1")
                .run((context) -> assertThat(context).hasNotFailed());
    }
}
